-- Cases for core/ops/loss.c (format: spec/cases/elementwise.lua), each with a naive reference
-- (PyTorch's documented formulas over plain numbers), run by gradcheck_spec and by cuda_parity_spec
-- on both sides. Class ids, weights and pos_weight are fixed inside fn (not differentiable: a nudged
-- id is not an id) and follow the input onto its device (int64 ids: a GPU takes no float ids).
-- Probabilities stay inside (0.05, 0.95), away from the clamps. The sweeps at the end (from the CUDA
-- parity run) cover sizes over the launch edges, every class-loss option on [129, 5] and each
-- reduction of the elementwise losses; they gradcheck at their own small sizes (n nil). Float ids
-- and bad ids are loss_spec's; the GPU's nan at a bad id, and the losses composed in Lua (mae,
-- huber, kl_div, soft targets), cuda_parity_spec's.
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local function prob(...) return fnn.rand(...) * 0.8 + 0.1 end
-- t on x's device
local function on(x, t) return t:to(x:device()) end
local function ids(x, v) return on(x, fnn.long(v)) end
local function vec(x, v) return on(x, fnn.tensor(v)) end
-- 300 ids in 1..3, every 7th 2 (ignored by its case)
local function ids300()
   local v = {}
   for i = 1, 300 do v[i] = i % 7 == 0 and 2 or i % 3 + 1 end
   return v
end


-- ---- naive references ----
local N_ = require 'naive_nd'
local function reduce(per, shape, reduction, denom)
   if reduction == 'none' then return N_.build(shape, function(idx) return per[N_.offset(shape, idx) + 1] end) end
   local s = 0
   for _, l in ipairs(per) do s = s + l end
   return fnn.tensor(reduction == 'sum' and s or s / (denom or #per))
end
-- cross_entropy (log_p: the log-softmax over the class dim 2, or dim 1 of an unbatched [C]) and
-- nll_loss (log_p: x itself): site loss -(1 - eps) w[y] lp[y] - eps / C sum_c w[c] lp[c], 0 at an
-- ignored id; the mean divides by the sum of w[y] over the sites not ignored
local function class_ref(x, ids, opts, nll)
   opts = opts or {}
   local get, xs = N_.reader(x)
   local idv = type(ids) == 'table' and ids or {ids}
   local flat = {}
   local function walk(t) for _, v in ipairs(t) do if type(v) == 'table' then walk(v) else flat[#flat + 1] = v end end end
   walk(idv)
   local unbatched = #xs == 1
   local C = unbatched and xs[1] or xs[2]
   local sshape = {}   -- the sites: [N, d...]
   if not unbatched then
      sshape[1] = xs[1]
      for d = 3, #xs do sshape[#sshape + 1] = xs[d] end
   end
   local w = opts.weight or {}
   local eps, ignore = opts.label_smoothing or 0, opts.ignore_index or -100
   local per, denom = {}, 0
   N_.each(sshape, function(site)
      local function at(c)
         if unbatched then return get{c} end
         local idx = {site[1], c}
         for d = 2, #site do idx[d + 1] = site[d] end
         return get(idx)
      end
      local lp, m, se = {}, -math.huge, 0
      for c = 1, C do lp[c] = at(c); m = math.max(m, lp[c]) end
      if not nll then
         for c = 1, C do se = se + math.exp(lp[c] - m) end
         for c = 1, C do lp[c] = lp[c] - m - math.log(se) end
      end
      local y = flat[#per + 1]
      if y == ignore then per[#per + 1] = 0; return end
      local smooth = 0
      for c = 1, C do smooth = smooth - (w[c] or 1) * lp[c] end
      per[#per + 1] = -(1 - eps) * (w[y] or 1) * lp[y] + eps / C * smooth
      denom = denom + (w[y] or 1)
   end)
   return reduce(per, sshape, opts.reduction or 'mean', denom)
end
local function softplus(z) return math.max(z, 0) + math.log(1 + math.exp(-math.abs(z))) end
-- an elementwise loss f(a, b, w, pw) over same-shaped a, b, with weight and pos_weight broadcast
local function pointwise_ref(a, b, f, opts)
   opts = opts or {}
   local ga, shape = N_.reader(a)
   local gb = N_.reader(b)
   local gw = opts.weight and N_.broadcast(opts.weight)
   local gp = opts.pos_weight and N_.broadcast(opts.pos_weight)
   local per = {}
   N_.each(shape, function(idx)
      per[#per + 1] = f(ga(idx), gb(idx), gw and gw(idx) or 1, gp and gp(idx) or 1)
   end)
   return reduce(per, shape, opts.reduction or 'mean')
end
local function bce(p, t, w) return -w * (t * math.max(math.log(p), -100) + (1 - t) * math.max(math.log(1 - p), -100)) end
local function bce_logits(x, t, w, pw) return w * (pw * t * softplus(-x) + (1 - t) * softplus(x)) end
local function sq(p, t) return (p - t) ^ 2 end

local cases = {
   {op = 'cross_entropy', inputs = function() return u(4, 5) end,
    fn = function(logits) return fnn.cross_entropy(logits, ids(logits, {2, 5, 1, 2})) end,
    ref = function(x) return class_ref(x, {2, 5, 1, 2}) end},
   {op = 'cross_entropy', inputs = function() return u(5, 3) end,   -- transposed logits, read in place
    fn = function(x) return fnn.cross_entropy(x:t(), ids(x, {3, 1, 2})) end,
    ref = function(x) return class_ref(x:t(), {3, 1, 2}) end},
   {op = 'cross_entropy', inputs = function() return u(4, 5) end,   -- weights, smoothing, an ignored row
    fn = function(x)
       return fnn.cross_entropy(x, ids(x, {2, -100, 1, 5}), {weight = vec(x, {0.5, 2, 1, 1.5, 3}),
                                                             label_smoothing = 0.2})
    end,
    ref = function(x) return class_ref(x, {2, -100, 1, 5}, {weight = {0.5, 2, 1, 1.5, 3}, label_smoothing = 0.2}) end},
   {op = 'cross_entropy', inputs = function() return u(2, 3, 2, 2) end,   -- [N, C, d1, d2], per site
    fn = function(x)
       return fnn.cross_entropy(x, ids(x, {{{1, 3}, {2, 2}}, {{3, 1}, {1, 0}}}),
                                {ignore_index = 0, reduction = 'none', label_smoothing = 0.1})
    end,
    ref = function(x)
       return class_ref(x, {{{1, 3}, {2, 2}}, {{3, 1}, {1, 0}}}, {ignore_index = 0, reduction = 'none', label_smoothing = 0.1})
    end},
   {op = 'cross_entropy', inputs = function() return u(2, 4, 3):transpose(2, 3) end,   -- [2,3,4] copied first
    fn = function(x) return fnn.cross_entropy(x, ids(x, {{1, 2, 3, 1}, {3, 3, 2, 1}}), {reduction = 'sum'}) end,
    ref = function(x) return class_ref(x, {{1, 2, 3, 1}, {3, 3, 2, 1}}, {reduction = 'sum'}) end},
   {op = 'cross_entropy', inputs = function() return u(3, 4) end,   -- sum, smoothing with weights
    fn = function(x) return fnn.cross_entropy(x, ids(x, {4, 1, 3}), {reduction = 'sum', weight = vec(x, {1, 2, 3, 4}),
                                                                     label_smoothing = 0.3}) end,
    ref = function(x) return class_ref(x, {4, 1, 3}, {reduction = 'sum', weight = {1, 2, 3, 4}, label_smoothing = 0.3}) end},
   {op = 'cross_entropy', inputs = function() return u(3, 20) end,   -- long rows: the vectorized kernel
    fn = function(x) return fnn.cross_entropy(x, ids(x, {20, 1, 7}), {label_smoothing = 0.1, reduction = 'none'}) end,
    ref = function(x) return class_ref(x, {20, 1, 7}, {label_smoothing = 0.1, reduction = 'none'}) end},
   {op = 'cross_entropy', inputs = function() return u(6) end,   -- unbatched [C]
    fn = function(x) return fnn.cross_entropy(x, on(x, fnn.long{4}:reshape{})) end,
    ref = function(x) return class_ref(x, 4) end},
   {op = 'cross_entropy', inputs = function() return u(300, 3) end,   -- sites past one block of threads
    fn = function(x) return fnn.cross_entropy(x, ids(x, ids300()), {ignore_index = 2}) end,
    ref = function(x) return class_ref(x, ids300(), {ignore_index = 2}) end},
   {op = 'nll_loss', inputs = function() return u(4, 3) end,
    fn = function(x) return fnn.nll_loss(x, ids(x, {3, 1, 2, 2}), {weight = vec(x, {1, 0.5, 2})}) end,
    ref = function(x) return class_ref(x, {3, 1, 2, 2}, {weight = {1, 0.5, 2}}, true) end},
   {op = 'nll_loss', inputs = function() return u(2, 3, 4) end,   -- [N, C, d], per site, one ignored
    fn = function(x) return fnn.nll_loss(x, ids(x, {{1, 2, 3, 7}, {3, 3, 1, 2}}), {ignore_index = 7,
                                                                                 reduction = 'none'}) end,
    ref = function(x) return class_ref(x, {{1, 2, 3, 7}, {3, 3, 1, 2}}, {ignore_index = 7, reduction = 'none'}, true) end},
   {op = 'nll_loss', inputs = function() return u(3, 5) end,   -- transposed input, sum
    fn = function(x) return fnn.nll_loss(x:t(), ids(x, {1, 3, 2, 3, 1}), {reduction = 'sum'}) end,
    ref = function(x) return class_ref(x:t(), {1, 3, 2, 3, 1}, {reduction = 'sum'}, true) end},
   {op = 'binary_cross_entropy', inputs = function() return prob(3, 4), prob(3, 4) end,
    fn = function(p, t) return fnn.binary_cross_entropy(p, t) end,
    ref = function(p, t) return pointwise_ref(p, t, bce) end},
   {op = 'binary_cross_entropy', inputs = function() return prob(4, 3), prob(3, 4) end,   -- weight [4] broadcast
    fn = function(p, t)
       return fnn.binary_cross_entropy(p:t(), t, {weight = vec(p, {1, 2, 0.5, 3}), reduction = 'none'})
    end,
    ref = function(p, t) return pointwise_ref(p:t(), t, bce, {weight = fnn.tensor{1, 2, 0.5, 3}, reduction = 'none'}) end},
   {op = 'binary_cross_entropy', inputs = function() return prob(300), prob(300) end,   -- past one block, sum
    fn = function(p, t) return fnn.binary_cross_entropy(p, t, {reduction = 'sum'}) end,
    ref = function(p, t) return pointwise_ref(p, t, bce, {reduction = 'sum'}) end},
   {op = 'bce_with_logits', inputs = function() return u(3, 4), prob(3, 4) end,
    fn = function(x, t) return fnn.bce_with_logits(x, t) end,
    ref = function(x, t) return pointwise_ref(x, t, bce_logits) end},
   {op = 'bce_with_logits', inputs = function() return u(4, 3), prob(3, 4) end,
    fn = function(x, t)
       return fnn.bce_with_logits(x:t(), t, {weight = vec(x, {{2}, {1}, {0.5}}), pos_weight = vec(x, {3, 1, 0.5, 2}),
                                             reduction = 'sum'})
    end,
    ref = function(x, t)
       return pointwise_ref(x:t(), t, bce_logits, {weight = fnn.tensor{{2}, {1}, {0.5}}, pos_weight = fnn.tensor{3, 1, 0.5, 2},
                                                   reduction = 'sum'})
    end},
   {op = 'bce_with_logits', inputs = function() return u(2, 3), prob(2, 3) end,
    fn = function(x, t) return fnn.bce_with_logits(x, t, {pos_weight = on(x, fnn.tensor(2.5)), reduction = 'none'}) end,
    ref = function(x, t) return pointwise_ref(x, t, bce_logits, {pos_weight = fnn.tensor{2.5}, reduction = 'none'}) end},
   {op = 'mse_loss', inputs = function() return u(3, 4), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p, t) end,
    ref = function(p, t) return pointwise_ref(p, t, sq) end},
   {op = 'mse_loss', inputs = function() return u(4, 3), u(3, 4) end,
    fn = function(p, t) return fnn.mse_loss(p:t(), t) end,
    ref = function(p, t) return pointwise_ref(p:t(), t, sq) end},
   {op = 'mse_loss', inputs = function() return u(300), u(300) end,   -- past one block
    fn = function(p, t) return fnn.mse_loss(p, t) end,
    ref = function(p, t) return pointwise_ref(p, t, sq) end},
}

-- ---- sweeps (from the CUDA parity run): sizes over the launch edges, every option of the class
-- losses on [129, 5], each reduction of the elementwise ones. Parity: __expf/__logf and sums in another
-- order: atol 1e-6, rtol 2e-5, gradients 2x. n nil: gradcheck's small size ----
local FAST = {1e-6, 2e-5}
local function uu(shape, lo, hi) return fnn.rand(shape) * (hi - lo) + lo end
-- class ids 1..C (deterministic); ignore: every 7th id replaced by that value
local function class_ids(n, classes, ignore)
   local v = {}
   for i = 1, n do v[i] = (ignore and i % 7 == 0) and ignore or (i * 37 + 11) % classes + 1 end
   return v
end
local function logits(n) return uu({n or 4, 5}, -3, 3) end
cases[#cases + 1] = {op = 'cross_entropy', sizes = {1, 127, 128, 129, 1025}, parity = FAST, inputs = logits,
   fn = function(x) return fnn.cross_entropy(x, ids(x, class_ids(x:shape()[1], 5))) end,
   ref = function(x) return class_ref(x, class_ids(x:shape()[1], 5)) end}
local W5 = {0.5, 2, 1, 1.5, 0.25}
-- {opts, ignore}: a weight of true is W5 on the input's device
local OPTS = {
   {{reduction = 'sum'}}, {{reduction = 'none'}}, {{weight = true}}, {{ignore_index = 3}, 3}, {{}, -100},
   {{label_smoothing = 0.1}},
   {{weight = true, label_smoothing = 0.2, ignore_index = 2, reduction = 'sum'}, 2},
}
local function with(x, o)
   local opts, ref = {}, {}
   for k, v in pairs(o) do opts[k], ref[k] = v, v end
   if o.weight then opts.weight, ref.weight = vec(x, W5), W5 end
   return opts, ref
end
for _, c in ipairs(OPTS) do
   cases[#cases + 1] = {op = 'cross_entropy', sizes = {129}, parity = FAST, inputs = function(n) return logits(n or 8) end,
      fn = function(x) return fnn.cross_entropy(x, ids(x, class_ids(x:shape()[1], 5, c[2])), (with(x, c[1]))) end,
      ref = function(x) return class_ref(x, class_ids(x:shape()[1], 5, c[2]), select(2, with(x, c[1]))) end}
   -- nll_loss of log_softmax: the cross entropy without smoothing (the options of the nll sweep)
   if not c[1].label_smoothing and c[2] ~= 3 then
      cases[#cases + 1] = {op = 'nll_loss', sizes = {129}, parity = FAST, inputs = function(n) return logits(n or 8) end,
         fn = function(x) return fnn.nll_loss(x:log_softmax(2), ids(x, class_ids(x:shape()[1], 5, c[2])), (with(x, c[1]))) end,
         ref = function(x) return class_ref(x, class_ids(x:shape()[1], 5, c[2]), select(2, with(x, c[1]))) end}
   end
end
cases[#cases + 1] = {op = 'nll_loss', sizes = {129}, parity = FAST, inputs = function(n) return logits(n or 8) end,
   fn = function(x)
      local opts = {reduction = 'sum', weight = vec(x, W5), ignore_index = 1}
      return fnn.nll_loss(x:log_softmax(2), ids(x, class_ids(x:shape()[1], 5, 1)), opts)
   end,
   ref = function(x)
      return class_ref(x, class_ids(x:shape()[1], 5, 1), {reduction = 'sum', weight = W5, ignore_index = 1})
   end}
-- [5, n]^T logits (non-contiguous), n 129
cases[#cases + 1] = {op = 'cross_entropy', sizes = {129}, parity = FAST, inputs = function(n) return uu({5, n or 6}, -3, 3) end,
   fn = function(x) return fnn.cross_entropy(x:t(), ids(x, class_ids(x:shape()[2], 5))) end,
   ref = function(x) return class_ref(x:t(), class_ids(x:shape()[2], 5)) end}
-- [3, 4, 2, 5]: sites along d..., reductions none and mean together
-- the 30 class ids in 1..4 as a nested [3, 2, 5] table
local function sites()
   local v, t = class_ids(30, 4), {}
   for a = 1, 3 do
      t[a] = {}
      for b = 1, 2 do
         t[a][b] = {}
         for c = 1, 5 do t[a][b][c] = v[((a - 1) * 2 + b - 1) * 5 + c] end
      end
   end
   return t
end
cases[#cases + 1] = {op = 'cross_entropy', parity = FAST, inputs = function() return uu({3, 4, 2, 5}, -3, 3) end,
   fn = function(x)
      local t = ids(x, sites())
      return fnn.cross_entropy(x, t, {reduction = 'none'}) + fnn.cross_entropy(x, t)
   end,
   ref = function(x)
      local mean = class_ref(x, sites()):item()
      return N_.zip(function(l) return l + mean end, class_ref(x, sites(), {reduction = 'none'}))
   end}
cases[#cases + 1] = {op = 'cross_entropy', parity = FAST, inputs = function() return uu({7}, -3, 3) end,   -- one site
   fn = function(x) return fnn.cross_entropy(x, on(x, fnn.long{4}:reshape{})) end,
   ref = function(x) return class_ref(x, 4) end}
-- the elementwise losses of [n, 3] in each reduction (n nil: 4)
local W3, PW = {0.7, 1.6, 1.1}, {{2.5, 0.8, 1.9}}
for _, r in ipairs{'mean', 'sum', 'none'} do
   cases[#cases + 1] = {op = 'mse_loss', sizes = {1, 129, 1025}, parity = FAST,
      inputs = function(n) return uu({n or 4, 3}, -2, 2), uu({n or 4, 3}, -2, 2) end,
      fn = function(p, t) return fnn.nn.mse(p, t, {reduction = r}) end,   -- the fused mse_loss and its reductions
      ref = function(p, t) return pointwise_ref(p, t, sq, {reduction = r}) end}
   cases[#cases + 1] = {op = 'binary_cross_entropy', sizes = {1, 129, 1025}, parity = FAST,
      inputs = function(n) return uu({n or 4, 3}, 0.05, 0.95), uu({n or 4, 3}, 0, 1) end,
      fn = function(p, t) return fnn.binary_cross_entropy(p, t, {reduction = r}) end,
      ref = function(p, t) return pointwise_ref(p, t, bce, {reduction = r}) end}
   cases[#cases + 1] = {op = 'bce_with_logits', sizes = {1, 129, 1025}, parity = FAST,
      inputs = function(n) return uu({n or 4, 3}, -4, 4), uu({n or 4, 3}, 0, 1) end,
      fn = function(x, t) return fnn.bce_with_logits(x, t, {reduction = r}) end,
      ref = function(x, t) return pointwise_ref(x, t, bce_logits, {reduction = r}) end}
end
cases[#cases + 1] = {op = 'mse_loss', sizes = {129}, parity = FAST,   -- [7, n]^T (non-contiguous)
   inputs = function(n) return uu({7, n or 3}, -2, 2), uu({n or 3, 7}, -2, 2) end,
   fn = function(p, t) return fnn.mse_loss(p:t(), t) end,
   ref = function(p, t) return pointwise_ref(p:t(), t, sq) end}
-- a weight [3] broadcast; a weight and a pos_weight [1, 3], sum (n 65; nil: 4)
cases[#cases + 1] = {op = 'binary_cross_entropy', sizes = {65}, parity = FAST,
   inputs = function(n) return uu({n or 4, 3}, 0.05, 0.95), uu({n or 4, 3}, 0, 1) end,
   fn = function(p, t) return fnn.binary_cross_entropy(p, t, {weight = vec(p, W3)}) end,
   ref = function(p, t) return pointwise_ref(p, t, bce, {weight = fnn.tensor(W3)}) end}
cases[#cases + 1] = {op = 'bce_with_logits', sizes = {65}, parity = FAST,
   inputs = function(n) return uu({n or 4, 3}, -4, 4), uu({n or 4, 3}, 0, 1) end,
   fn = function(x, t)
      return fnn.bce_with_logits(x, t, {weight = vec(x, W3), pos_weight = vec(x, PW), reduction = 'sum'})
   end,
   ref = function(x, t)
      return pointwise_ref(x, t, bce_logits, {weight = fnn.tensor(W3), pos_weight = fnn.tensor(PW), reduction = 'sum'})
   end}

return cases
