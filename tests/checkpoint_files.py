"""What tests read straight from checkpoint files, to compare with what the code wrote or loaded."""

from modeling.checkpoints.google_tf1 import open_reader


def read_variables(path):
  """Google name -> numpy array for every variable of a TF1 checkpoint (prefix or directory)."""
  _, reader = open_reader(path)
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
