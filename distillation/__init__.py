"""Knowledge distillation of BERT (TinyBERT, Jiao et al. 2020; MiniLM's attention KL).

Modules, one concept each:
  losses     -- the loss terms on tensors, padded positions left out
  layer_map  -- which teacher layer each student layer learns from
  student    -- a student made of copied teacher layers
  model      -- the frozen teacher and the student on the same inputs, projections apart
  task       -- `DistillationTask`, the layer-wise losses as a `training.task.Task`
  general    -- general distillation on pre-training records (general_distill.py)
  augment    -- TinyBERT's data augmentation of a task's training file (augment_data.py)
"""
