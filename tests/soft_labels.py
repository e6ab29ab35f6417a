"""Numpy references of the distributions distillation compares: log-softmax and KL."""

import numpy as np


def log_softmax(z):
  """log softmax over the last axis."""
  z = z - z.max(-1, keepdims=True)
  return z - np.log(np.exp(z).sum(-1, keepdims=True))


def mean_kl(teacher_logits, student_logits):
  """The mean KL(teacher || student) of the distributions over the last axis, in nats."""
  log_t = log_softmax(teacher_logits)
  return float((np.exp(log_t) * (log_t - log_softmax(student_logits))).sum(-1).mean())
