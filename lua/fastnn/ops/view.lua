-- fastnn.ops.view: the view family (core/ops/view.c: reshape, view, transpose, permute, expand,
-- narrow, select, squeeze, unsqueeze, flatten). Their bindings stay in fastnn.ops.shape beside
-- cat, pad and split/chunk, which share their argument parsing; this module only makes them
-- reachable by the family's name.
return require 'fastnn.ops.shape'
