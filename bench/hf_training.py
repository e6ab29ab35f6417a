"""The PyTorch peers' fine-tuning loop: Google's recipe on a HuggingFace model.

AdamW with Google's settings (betas 0.9/0.999, epsilon 1e-6, weight decay 0.01
except biases and LayerNorm), Google's learning rate (below), gradient clipping
to global norm 1.0, and a new random order of the examples every epoch, as a
repeated shuffled dataset.
"""

import random
import time

import numpy as np
import torch


def set_up(threads, seed):
  """torch's thread count (0: its default) and every random seed the peers draw from."""
  if threads:
    torch.set_num_threads(threads)
  random.seed(seed)
  np.random.seed(seed)
  torch.manual_seed(seed)


def google_schedule(num_steps, num_warmup_steps):
  """Google's learning-rate factor at a step: linear decay to 0 over all `num_steps`
  counted from step 0, overridden by the linear warmup while step < num_warmup_steps.

  Not `transformers.get_linear_schedule_with_warmup`, which starts its decay at the
  end of the warmup: over a short fine-tuning that is ~10% more learning rate after
  the warmup, a different recipe (see BENCHMARKS.md, "SQuAD quality").
  """
  def factor(step):
    if step < num_warmup_steps:
      return step / num_warmup_steps
    return max(0.0, 1.0 - step / num_steps)
  return factor


def train_like_google(model, inputs, num_steps, batch_size, learning_rate, warmup_proportion,
                      seed, log_steps, pad_to_longest=False):
  """Trains `model` on `inputs` ({name: tensor [N, ...]}, labels included); returns seconds.

  `pad_to_longest` cuts each batch's [batch, seq] tensors to its longest row (by
  `attention_mask`), as HF's `DataCollatorWithPadding` pads: same losses, less work.
  """
  decay = [p for n, p in model.named_parameters() if not ("bias" in n or "LayerNorm" in n)]
  no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
  optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}],
                                lr=learning_rate, betas=(0.9, 0.999), eps=1e-6)
  scheduler = torch.optim.lr_scheduler.LambdaLR(
      optimizer, google_schedule(num_steps, int(num_steps * warmup_proportion)))
  num_examples = len(next(iter(inputs.values())))
  generator = torch.Generator().manual_seed(seed)
  order = []
  model.train()
  start = time.time()
  for step in range(num_steps):
    if len(order) < batch_size:  # a new epoch
      order += torch.randperm(num_examples, generator=generator).tolist()
    batch, order = order[:batch_size], order[batch_size:]
    features = {k: v[batch] for k, v in inputs.items()}
    if pad_to_longest:
      length = int(features["attention_mask"].sum(1).max())
      features = {k: v[:, :length] if v.dim() == 2 else v for k, v in features.items()}
    out = model(**features)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    if (step + 1) % log_steps == 0 or step + 1 == num_steps:
      rate = (step + 1) * batch_size / (time.time() - start)
      print(f"step {step + 1}/{num_steps}: loss = {out.loss.item():.4f}, "
            f"examples_per_second = {rate:.1f}", flush=True)
  model.eval()
  return time.time() - start
