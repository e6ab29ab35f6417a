"""Knowledge distillation of BERT (TinyBERT, Jiao et al. 2020; MiniLM's attention KL).

Modules, one concept each:
  losses     -- the loss terms on tensors, padded positions left out
  layer_map  -- which teacher layer each student layer learns from
  student    -- a student made of copied teacher layers
  model      -- the frozen teacher and the student on the same inputs, projections apart
  layerwise  -- `LayerwiseDistillationTask`, the layer-wise losses as a `training.task.Task`
  options    -- the options (flags) of general_distill.py and task_distill.py
  general    -- general distillation on pre-training records (general_distill.py)
  teacher    -- task distillation's fine-tuned teacher: loaded, checked
  prediction -- the prediction stage: the student's logits learn the teacher's
  downstream -- task distillation's two stages on a run_classifier task (task_distill.py)
  augment    -- TinyBERT's data augmentation of a task's training file (augment_data.py)
"""
