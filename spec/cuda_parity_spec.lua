-- CUDA parity: each case runs on the CPU and on GPU 0 and the results must agree, forward
-- values and, where the op is differentiable, the gradient of every input (backward with the
-- same fixed weights on both sides). The ops' values are the case tables spec/cases/<family>.lua,
-- every family's, run here on both sides at each of a case's `sizes` (the sweeps across launch edges
-- 1, 127, 128, 129, 1023, 1024, 1025, transposed and broadcast inputs, ties, nan and inf, long lines
-- are cases there, each with its tolerance). Written out below is what is not an op's values: every
-- fused optimizer step of core/optim.c, cuRAND draws and the dropouts on them, the losses composed in
-- Lua (soft targets, mae, huber, kl_div), take_rows, ids out of range and float ids, a CPU Param's
-- gradient through the GPU, a fraction cast to int64, a 20-step MLP training run (Linear-ReLU-Linear,
-- cross_entropy, Adam), 3 steps of BatchNorm2d-ReLU-MaxPool2d (SGD), devices and memory.
--
-- Tolerances, |gpu - cpu| <= atol + rtol |cpu| (the CUDA build uses --use_fast_math); the case
-- tables' own (spec/cases/elementwise.lua, reduction.lua, linalg.lua say why) are:
--   add/sub/mul/div, copies, views, casts, comparisons, where, relu-like ops, max/min/argmax: exact
--     (atol 0, rtol 1e-6: one IEEE operation or none per element);
--   exp, log, tanh, sigmoid and the activations built on them: rtol 2e-5, atol 1e-6
--     (__expf/__logf, a few ulp; exp's error grows with |x|, inputs stay in [-3, 3]);
--   sin, cos: atol 2e-6 (__sinf/__cosf: absolute error ~4e-7 on [-pi, pi]);
--   pow, rpow, pow_scalar (powf = exp2(y log2 x) in fast math): rtol 1e-4;
--   sum, mean, var, std, prod, norm, logsumexp: rtol 1e-5, atol 1e-6 max(1, sqrt(numel)/4) (the
--     CPU adds contiguous runs in 16 float lanes, then in double, the GPU in double, so a
--     cancelling sum differs by float rounding that grows as sqrt(numel)); softmax, log_softmax: rtol 2e-5, atol 1e-6;
--   matmul: atol 1e-5 sqrt(k) (cuBLAS sums k products in another order);
--   a case without its own: atol 1e-5, rtol 1e-4.
-- Written out here:
--   SGD: rtol 1e-6 (FMA contraction); Adam/AdamW/amsgrad, RMSprop, Adagrad, Adadelta, RAdam, Lion,
--     decay, lerp: rtol 2e-5, atol 1e-6 (fast sqrt and division).
--   cross_entropy, nll_loss, the elementwise losses: rtol 2e-5, atol 1e-6 (__expf/__logf, sums in
--     another order), gradients 2x (the loss cases' parity field too);
--   index_select, gather, take_rows, embedding forward: exact; their backward and scatter_add
--     add through atomicAdd, whose order (so the last bits) depends on the run: rtol 1e-5, atol 1e-6
--     (the index and embedding cases' parity field);
--   the other families' cases: their `parity` field, with its reason beside it in spec/cases/;
--   the MLP run: every step's loss within rtol 1e-4, the final weights within 1e-4; the BatchNorm2d
--     run: the losses, the running stats and the weights within rtol 1e-4.
-- On the GPU nothing is read back to the host inside an op, so an id outside its range (class
-- losses, index family), a probability outside [0, 1] (bce) or a fraction cast to int64 gives
-- nan (INT64_MIN for the cast) where the CPU raises; cases below check both behaviours.
--
-- Without a usable GPU (no CUDA build, or no device) every case prints
-- "<case>: skipped: no CUDA device" and asserts instead that Device.cuda(0) and moving the
-- case's inputs there fail saying why, so this file checks something real everywhere.
-- spec/gpu/check.sh runs it on a GPU machine; spec/gpu/emulate.sh runs it against the kernels
-- emulated on the host (FASTNN_EMULATED_GPU set), which checks logic, not a GPU.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local C = require 'fastnn.C'
local T = require 'fastnn.tensor'
local Device, Param = fnn.Device, fnn.Param
local S = require 'cuda_support'
local gpu, why, built, reason, CUDA0, SIZES = S.gpu, S.why, S.built, S.reason, S.CUDA0, S.SIZES
local uniform, assert_close, case, skip, to_gpu = S.uniform, S.assert_close, S.case, S.skip, S.to_gpu
local parity, weights, parity_grad, class_ids, some_ids, ok = S.parity, S.weights, S.parity_grad, S.class_ids, S.some_ids, S.ok
local EXACT, FAST, TRIG, POW, ATOMIC = S.EXACT, S.FAST, S.TRIG, S.POW, S.ATOMIC


-- every case of spec/cases/<family>.lua on both sides (forward and, where differentiable, every
-- input's gradient), for every family of the registry, at each of the case's `sizes`: this is the
-- ops' parity spec, so a new op's case is its parity case too (registry_spec checks that every CUDA
-- row has one). Tolerance: the case's `parity` {atol, rtol[, gtol]} (or a function of the size), else
-- {1e-5, 1e-4}. An op the registry says this build's backend lacks (has_cuda false) is not run, nor a
-- case with parity = false (a dtype the GPU refuses on purpose).
local function case_families()
   local list = {}
   for family in pairs(fnn.op_families) do list[#list + 1] = family end
   table.sort(list)
   return list
end
describe('cuda parity: the case tables of every family', function()
   local info = {}
   for _, op in ipairs(fnn.ops()) do info[op.name] = op end
   for _, family in ipairs(case_families()) do
      local ok, cases = pcall(require, 'cases.' .. family)
      for k, c in ipairs(ok and cases or {}) do
         if not built or info[c.op].has_cuda then
            for _, n in ipairs(c.sizes or {false}) do
               case(('%s case %d (%s)%s'):format(family, k, c.op, n and (' size %d'):format(n) or ''), function()
                  local tol = type(c.parity) == 'function' and c.parity(n or nil) or c.parity or {1e-5, 1e-4}
                  fnn.manual_seed(500 + k)
                  if info[c.op].differentiable and c.gradcheck ~= false then
                     parity_grad(c.op, {c.inputs(n or nil)}, c.fn, tol[1], tol[2], tol[3])
                  else
                     parity(c.op, {c.inputs(n or nil)}, c.fn, tol[1], tol[2])
                  end
               end)
            end
         end
      end
   end
end)

-- a Param on the CPU used on the GPU: its gradient comes back to the CPU (device mechanics; the
-- views' values and gradients are the cases of spec/cases/view.lua)
describe('cuda: to_device backward', function()
   for _, n in ipairs{1, 129, 1025} do
      case(('to_device backward: a CPU Param [%d,3] through the GPU gets its gradient on the CPU'):format(n), function()
         local x0 = uniform({n, 3}, -1, 1)
         if not gpu then return skip('to_device', {x0}) end
         local p = Param(x0)
         local y = (p:tensor():to(gpu) * 3):sum()
         y:backward()
         assert.equals('cpu', tostring(p:grad():device()))
         assert_close(fnn.full({n, 3}, 3), p:grad(), 0, 0, 'to_device: gradient')
      end)
   end
end)

-- three optimizer steps through the raw C entry on the CPU and on the GPU; the param and every
-- state tensor must agree after each step. step(p, states, t) runs one step.
local function parity_optim(label, n, nstates, step, atol, rtol)
   local w0 = uniform({n}, -1, 1)
   local grads = {uniform({n}, -1, 1), uniform({n}, -1, 1), uniform({n}, -1, 1)}
   if not gpu then return skip(label, {w0, grads[1]}) end
   local function run(dev)
      local p = Param(fnn.tensor(w0:to_flat(), {n}):to(dev))   -- a fresh copy: the steps update it in place
      local states = {}
      for k = 1, nstates do states[k] = fnn.zeros(n):to(dev) end
      local trail = {}
      for t = 1, 3 do
         p:set_grad(grads[t]:to(dev))
         step(p, states, t)
         -- snapshots: on the CPU, to('cpu') is the same storage, which the next step updates
         local function snap(x) return fnn.tensor(x:to('cpu'):to_flat(), x:shape()) end
         trail[t] = {snap(p:tensor())}
         for k = 1, nstates do trail[t][k + 1] = snap(states[k]) end
      end
      return trail
   end
   local want, got = run(Device.cpu()), run(gpu)
   for t = 1, 3 do
      for k = 1, nstates + 1 do
         assert_close(want[t][k], got[t][k], atol, rtol, ('%s: step %d, %s'):format(label, t, k == 1 and 'param' or 'state ' .. (k - 1)))
      end
   end
end

describe('cuda parity: fused optimizer steps', function()
   local SGD = {
      {lr = 0.1, momentum = 0, dampening = 0, wd = 0, nesterov = 0},
      {lr = 0.05, momentum = 0.9, dampening = 0.1, wd = 0.01, nesterov = 0},
      {lr = 0.05, momentum = 0.8, dampening = 0, wd = 0.1, nesterov = 1},
   }
   local ADAM = {
      {lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0, decoupled = 0, amsgrad = false},
      {lr = 1e-2, b1 = 0.8, b2 = 0.99, eps = 1e-6, wd = 0.1, decoupled = 0, amsgrad = false},
      {lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05, decoupled = 1, amsgrad = false},
      {lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05, decoupled = 1, amsgrad = true},
   }
   for _, n in ipairs(SIZES) do
      for k, o in ipairs(SGD) do
         case(('sgd %d (momentum %g, nesterov %d), size %d'):format(k, o.momentum, o.nesterov, n), function()
            parity_optim('sgd', n, 1, function(p, s, t)
               ok(C.fnn_optim_sgd(p.node, s[1], o.lr, o.momentum, o.dampening, o.wd, o.nesterov, t == 1 and 1 or 0))
            end, 1e-7, 1e-6)
         end)
      end
      local OTHER = {   -- {label, number of state tensors, one step}
         {'rmsprop', 1, function(p, s) return C.fnn_optim_rmsprop(p.node, s[1], nil, nil, 1e-2, 0.99, 1e-8, 0, 0) end},
         {'rmsprop centered, momentum, wd', 3, function(p, s)
            return C.fnn_optim_rmsprop(p.node, s[1], s[2], s[3], 1e-2, 0.9, 1e-6, 0.1, 0.9) end},
         {'adagrad', 1, function(p, s, t) return C.fnn_optim_adagrad(p.node, s[1], 1e-2, 0.1, 0.01, 1e-10, t) end},
         {'adadelta', 2, function(p, s) return C.fnn_optim_adadelta(p.node, s[1], s[2], 1.0, 0.9, 1e-6, 0.01) end},
         {'radam (not rectified)', 2, function(p, s, t)
            return C.fnn_optim_radam(p.node, s[1], s[2], 1e-2, 0.9, 0.999, 1e-8, 0.01, t) end},
         {'radam (rectified)', 2, function(p, s, t)
            return C.fnn_optim_radam(p.node, s[1], s[2], 1e-2, 0.9, 0.999, 1e-8, 0.01, t + 10) end},
         {'lion', 1, function(p, s) return C.fnn_optim_lion(p.node, s[1], 1e-3, 0.9, 0.99, 0.1) end},
         {'decay and lerp (ema)', 1, function(p, s)
            local rc = C.fnn_optim_decay(p.node, 0.97)
            if rc ~= 0 then return rc end
            return C.fnn_optim_lerp(s[1], p:tensor(), 0.1)
         end},
      }
      for _, o in ipairs(OTHER) do
         case(('%s, size %d'):format(o[1], n), function()
            parity_optim(o[1], n, o[2], function(p, s, t) ok(o[3](p, s, t)) end, 1e-6, 2e-5)
         end)
      end
      for k, o in ipairs(ADAM) do
         local kind = o.amsgrad and 'amsgrad' or o.decoupled == 1 and 'adamw' or 'adam'
         case(('%s %d (wd %g), size %d'):format(kind, k, o.wd, n), function()
            parity_optim(kind, n, o.amsgrad and 3 or 2, function(p, s, t)
               ok(C.fnn_optim_adam(p.node, s[1], s[2], o.amsgrad and s[3] or nil, o.lr, o.b1, o.b2, o.eps, o.wd,
                                   o.decoupled, t))
            end, 1e-6, 2e-5)
         end)
      end
   end
end)

-- a draw through the raw C entries fnn_uniform_on / fnn_normal_on / fnn_bernoulli_on
local function draw(kind, device, shape, a, b)
   local dims = ffi.new('int64_t[?]', #shape, shape)
   local out = T.new()
   local rc
   if kind == 'uniform' then rc = C.fnn_uniform_on(out, device, #shape, dims, a, b)
   elseif kind == 'normal' then rc = C.fnn_normal_on(out, device, #shape, dims, a, b)
   else rc = C.fnn_bernoulli_on(out, device, #shape, dims, a) end
   if rc ~= 0 then error(ffi.string(C.fnn_last_error()), 0) end
   return T.done(out)
end

local function moments(t)
   local v, s, ss = t:to('cpu'):to_flat(), 0, 0
   for i = 1, #v do s = s + v[i] end
   local m = s / #v
   for i = 1, #v do ss = ss + (v[i] - m) ^ 2 end
   return m, math.sqrt(ss / #v), v
end

describe('cuda: random draws (cuRAND Philox)', function()
   local KINDS = {{'uniform', -1, 3}, {'normal', 2, 0.5}, {'bernoulli', 0.3}}
   for _, k in ipairs(KINDS) do
      local kind, a, b = k[1], k[2], k[3]
      case(kind .. ' on the CPU device is the CPU draw of the same stream', function()
         fnn.manual_seed(11)
         local x = draw(kind, 0, {3, 5}, a, b)
         fnn.manual_seed(11)
         local want = kind == 'uniform' and fnn.uniform({3, 5}, a, b) or kind == 'normal' and fnn.randn(3, 5) * b + a
         if want then assert_close(want, x, 1e-6, 1e-6, kind) end
         assert.same({3, 5}, x:shape())
         assert.equals('cpu', tostring(x:device()))
      end)
      for _, n in ipairs{1, 1023, 1025, 100003} do
         case(('%s, %d draws: reproducible under manual_seed, with the right moments'):format(kind, n), function()
            if not gpu then
               print(('%s: skipped: no CUDA device'):format(current))
               assert.error_matches(function() return draw(kind, CUDA0, {n}, a, b) end, kind .. ': cuda:0 is not available')
               return
            end
            fnn.manual_seed(5)
            local x = draw(kind, CUDA0, {n}, a, b)
            assert.equals(gpu, x:device())
            fnn.manual_seed(5)
            local y = draw(kind, CUDA0, {n}, a, b)
            assert_close(x:to('cpu'), y:to('cpu'), 0, 0, kind .. ': same seed')
            local z = draw(kind, CUDA0, {n}, a, b)   -- the stream moved on: a different draw
            if n > 1 then assert.is_true((x - z):abs():max():to('cpu'):item() > 0, kind .. ': next draw repeated') end
            local m, sd, v = moments(x)
            local want_m, want_sd
            if kind == 'uniform' then
               want_m, want_sd = (a + b) / 2, (b - a) / math.sqrt(12)
               for i = 1, #v do assert.is_true(v[i] >= a and v[i] < b, 'uniform: value out of range') end
            elseif kind == 'normal' then want_m, want_sd = a, b
            else
               want_m, want_sd = a, math.sqrt(a * (1 - a))
               for i = 1, #v do assert.is_true(v[i] == 0 or v[i] == 1, 'bernoulli: not 0/1') end
            end
            if n >= 1000 then   -- 6 standard errors
               assert.is_true(math.abs(m - want_m) <= 6 * want_sd / math.sqrt(n), ('%s: mean %g'):format(kind, m))
               assert.is_true(math.abs(sd - want_sd) <= 0.1 * want_sd, ('%s: std %g'):format(kind, sd))
            end
         end)
      end
   end
end)


-- the noise layers draw their masks on the input's device (no mask crosses the bus): the GPU
-- stream differs from the CPU's, so these check the layers' arithmetic on the device's own draw
describe('cuda: Dropout, AlphaDropout, GaussianNoise on device draws', function()
   local nn = fnn.nn
   for _, n in ipairs{1, 1025, 20000} do
      case(('Dropout(0.3) on [%d]: mask drawn on the GPU, kept values x / 0.7, gradient mask / 0.7'):format(n), function()
         local x0 = uniform({n}, 1, 2)   -- never 0, so a zero output is a dropped element
         if not gpu then return skip('dropout', {x0}) end
         local layer = nn.Dropout(0.3)
         local p = Param(x0:to(gpu))
         local y = layer(p:tensor())
         assert.equals(gpu, y:device())
         y:backward(fnn.ones(n):to(gpu))
         local xv, yv, gv = x0:to_flat(), y:to('cpu'):to_flat(), p:grad():to('cpu'):to_flat()
         local dropped = 0
         for i = 1, n do
            if yv[i] == 0 then
               dropped = dropped + 1
               assert.equals(0, gv[i])
            else
               assert.is_true(math.abs(yv[i] - xv[i] / 0.7) <= 1e-6 * yv[i], ('dropout: element %d'):format(i))
               assert.is_true(math.abs(gv[i] - 1 / 0.7) <= 1e-6, ('dropout: gradient %d'):format(i))
            end
         end
         if n >= 1000 then   -- 6 standard errors of the dropped fraction
            assert.is_true(math.abs(dropped / n - 0.3) <= 6 * math.sqrt(0.21 / n), ('dropout: dropped %d of %d'):format(dropped, n))
         end
         layer:eval()
         assert_close(x0, layer(x0:to(gpu)):to('cpu'), 0, 0, 'dropout in eval mode')
      end)
   end
   case('AlphaDropout(0.2) and GaussianNoise(0.5) on a GPU input stay there, with the moments of their rules', function()
      local x0 = fnn.zeros(4096)
      if not gpu then return skip('noise', {x0}) end
      local x = x0:to(gpu)
      local y = nn.GaussianNoise(0.5)(x)
      assert.equals(gpu, y:device())
      local v, s, s2 = y:to('cpu'):to_flat(), 0, 0
      for i = 1, #v do s, s2 = s + v[i], s2 + v[i] * v[i] end
      local m = s / #v
      assert.is_true(math.abs(m) <= 6 * 0.5 / 64, ('gaussian noise: mean %g'):format(m))
      assert.is_true(math.abs(math.sqrt(s2 / #v - m * m) - 0.5) <= 0.05, 'gaussian noise: std')
      local a = nn.AlphaDropout(0.2)(x)   -- on zeros: kept elements give b, dropped ones a alpha' + b
      assert.equals(gpu, a:device())
      local values = {}
      for _, e in ipairs(a:to('cpu'):to_flat()) do values[('%.5f'):format(e)] = true end
      local distinct = 0
      for _ in pairs(values) do distinct = distinct + 1 end
      assert.equals(2, distinct)
   end)
end)

-- the class losses' values and gradients (cross_entropy, nll_loss: sizes over the launch edges, every
-- option, sites along d..., int64 targets on the device) are cases of spec/cases/loss.lua. Here: the
-- losses composed in Lua over them (soft targets, the Keras-named ones, the module), and the GPU's
-- behaviour at a bad id where the CPU raises.
describe('cuda parity: the composed class losses, and bad class ids', function()
   -- tolerance FAST (__expf/__logf), gradients 2x
   case('cross_entropy with soft targets, categorical and sparse categorical cross entropy from logits', function()
      local probs = uniform({65, 5}, 0, 1):softmax(2)
      parity_grad('cross_entropy soft', {uniform({65, 5}, -3, 3), probs},
                  function(x, p) return fnn.nn.cross_entropy(x, p, {label_smoothing = 0.1}) end, FAST[1], FAST[2])
      parity_grad('categorical_cross_entropy', {uniform({65, 5}, -3, 3), probs},
                  function(x, p) return fnn.nn.categorical_cross_entropy(x, p, {from_logits = true}) end,
                  FAST[1], FAST[2])
      local t = class_ids(65, 5)
      parity_grad('sparse_categorical_cross_entropy', {uniform({65, 5}, -3, 3)}, function(x)
         return fnn.nn.sparse_categorical_cross_entropy(x, t:to(x:device()), {from_logits = true})
      end, FAST[1], FAST[2])
      parity_grad('CrossEntropyLoss', {uniform({65, 5}, -3, 3)},
                  function(x) return fnn.nn.CrossEntropyLoss()(x, t:to(x:device())) end, FAST[1], FAST[2])
   end)
   case('a class id outside 1..C gives nan on the GPU (no host read), an error on the CPU', function()
      local x, t = uniform({4, 3}, -1, 1), fnn.tensor({1, 2, 9, 3}):long()
      if not gpu then return skip('cross_entropy', {x, t}) end
      assert.error_matches(function() return fnn.nn.cross_entropy(x, t) end, 'cross_entropy: class id 9 outside 1..3')
      local per = fnn.nn.cross_entropy(x:to(gpu), t:to(gpu), {reduction = 'none'}):to('cpu'):to_flat()
      assert.is_true(per[1] == per[1] and per[2] == per[2] and per[4] == per[4])
      assert.is_true(per[3] ~= per[3], 'the bad site is not nan')
      local mean = fnn.nn.cross_entropy(x:to(gpu), t:to(gpu)):to('cpu'):item()
      assert.is_true(mean ~= mean, 'the mean is not nan')
   end)
   case('float class ids on the GPU are refused, naming the op and the shape', function()
      local x, t = uniform({4, 3}, -1, 1), fnn.tensor{1, 2, 3, 3}
      if not gpu then return skip('cross_entropy', {x, t}) end
      assert.error_matches(function() return fnn.nn.cross_entropy(x:to(gpu), t:to(gpu)) end,
                           'cross_entropy: targets %[4%] on a GPU must be int64 class ids')
   end)
end)

-- the index family's values and gradients (index_select, gather, scatter_add, masked_fill, embedding:
-- sizes over the launch edges, repeated int64 ids on the device, int64 inputs, transposed views) are
-- cases of spec/cases/index.lua and spec/cases/embedding.lua. Here: take_rows (a C entry of the data
-- loaders, not a registry op) and the GPU's nan where the CPU raises at an id out of range.
describe('cuda parity: take_rows, and an id out of range (cuda/index.cu)', function()
   case('take_rows of [1025,3] (float32) and [9,2]^T (int64, non-contiguous), host ids copied over', function()
      local function take(x, ids)
         local buf = ffi.new('int64_t[?]', #ids, ids)
         local out = T.new()
         ok(C.fnn_take_rows(out, x, #ids, buf))
         return T.done(out)
      end
      local ids = {}
      for i = 1, 700 do ids[i] = (i * 31) % 1025 + 1 end
      parity('take_rows', {uniform({1025, 3}, -1, 1)}, function(x) return take(x, ids) end, 0, 0)
      parity('take_rows int64', {some_ids({2, 9}, 50)}, function(x) return take(x:t(), {9, 1, 4, 4}) end, 0, 0)
   end)
   case('an id outside the range gives nan on the GPU (no host read), an error on the CPU', function()
      local x, ids = uniform({4, 3}, -1, 1), fnn.tensor({2, 7, 1}):long()
      if not gpu then return skip('index_select', {x, ids}) end
      assert.error_matches(function() return x:index_select(1, ids) end, 'index_select: index 7 outside 1..4')
      local y = x:to(gpu):index_select(1, ids:to(gpu)):to('cpu'):to_table()
      assert.is_true(y[1][1] == y[1][1] and y[3][3] == y[3][3])
      for j = 1, 3 do assert.is_true(y[2][j] ~= y[2][j], 'the bad row is not nan') end
      assert.error_matches(function() return x:to(gpu):index_select(1, fnn.tensor{1, 2}:to(gpu)) end,
                           'index_select: index %[2%] on a GPU must be int64')
   end)
end)

-- the elementwise losses: mse, binary_cross_entropy and bce_with_logits fused (cuda/loss.cu, per-element
-- terms summed by the device reduce), mae, huber and kl_div composed in Lua of device ops. FAST
-- (__logf/__expf, sums in another order), gradients 2x.
-- mse, binary_cross_entropy and bce_with_logits (fused: every reduction over the launch edges, weights,
-- transposed inputs) are cases of spec/cases/loss.lua. Here: the losses composed in Lua of elementwise
-- ops (mae, huber, kl_div), and bce's nan on the GPU where the CPU raises.
describe('cuda parity: mae, huber, kl_div (composed), and bce outside [0, 1]', function()
   local nn = fnn.nn
   for _, n in ipairs{1, 129, 1025} do
      for _, r in ipairs{'mean', 'sum', 'none'} do
         case(('mae, huber [%d,3], reduction %s'):format(n, r), function()
            local inputs = {uniform({n, 3}, -2, 2), uniform({n, 3}, -2, 2)}
            parity_grad('mae', inputs, function(p, t) return nn.mae(p, t, {reduction = r}) end, FAST[1], FAST[2])
            parity_grad('huber', inputs, function(p, t) return nn.huber(p, t, {reduction = r, delta = 0.7}) end,
                        FAST[1], FAST[2])
         end)
      end
   end
   case('kl_div (batchmean; log_target; zeros in the target)', function()
      local p = uniform({33, 5}, 0, 1):softmax(2)
      local pz = p * uniform({33, 5}, 0, 1):gt(0.2)
      parity_grad('kl_div', {uniform({33, 5}, -3, 0), p}, function(q, t) return nn.kl_div(q, t) end, FAST[1], FAST[2])
      parity_grad('kl_div zeros', {uniform({33, 5}, -3, 0), pz},
                  function(q, t) return nn.kl_div(q, t, {reduction = 'sum'}) end, FAST[1], FAST[2])
      parity_grad('kl_div log_target', {uniform({33, 5}, -3, 0), uniform({33, 5}, -3, 0)},
                  function(q, t) return nn.kl_div(q, t, {log_target = true}) end, FAST[1], FAST[2])
   end)
   case('binary_cross_entropy of a value outside [0, 1]: nan on the GPU (no host read), an error on the CPU', function()
      local p, t = fnn.tensor{0.5, 1.5, 0.2}, fnn.tensor{1, 0, 1}
      if not gpu then return skip('binary_cross_entropy', {p, t}) end
      assert.error_matches(function() return nn.binary_cross_entropy(p, t) end,
                           'binary_cross_entropy: input 1.5 at element 2 of %[3%] is outside %[0, 1%]')
      local per = nn.binary_cross_entropy(p:to(gpu), t:to(gpu), {reduction = 'none'}):to('cpu'):to_flat()
      assert.is_true(per[1] == per[1] and per[3] == per[3])
      assert.is_true(per[2] ~= per[2], 'the bad element is not nan')
   end)
end)

-- a fraction cast to int64 on the device (cuda/cast.cu): the GPU reads nothing back, so it gives
-- INT64_MIN where the CPU raises (the casts' values are the cases of spec/cases/device.lua)
describe('cuda: a fraction cast to int64', function()
   case('a float that is not a whole number: INT64_MIN on the GPU (no host read), an error on the CPU', function()
      local x = fnn.tensor{1, 2.5, -3}
      if not gpu then return skip('long', {x}) end
      assert.error_matches(function() return x:long() end, 'long: element 2 of %[3%] is 2.5, not a whole number')
      local y = x:to(gpu):long():to('cpu')
      assert.equals('int64', y:dtype())
      local v = y:to_flat()
      assert.equals(1, v[1]); assert.equals(-3, v[3])
      assert.is_true(v[2] <= -2^62, 'the fraction did not become INT64_MIN')
   end)
end)

-- 20 steps of Linear-ReLU-Linear, cross_entropy, Adam from the same initial weights on the CPU and the
-- GPU: every step's loss agrees within rtol 1e-4, atol 1e-6 (each step's fast-math and cuBLAS order
-- differences feed the next step's weights, so the tolerance is looser than one op's), and so do
-- the final weights (atol 1e-4).
describe('cuda parity: training runs', function()
   case('MLP (Linear-ReLU-Linear, cross_entropy, Adam): 20 steps, same losses', function()
      fnn.manual_seed(7)
      local x, y = uniform({64, 20}, -1, 1), class_ids(64, 10)
      if not gpu then return skip('mlp', {x, y}) end
      local function train(dev)
         fnn.manual_seed(42)
         local model = fnn.nn.Sequential(fnn.nn.Linear(20, 32), fnn.nn.ReLU(), fnn.nn.Linear(32, 10))
         model:to_device(dev)
         local opt = fnn.optim.Adam(model:parameters(), 1e-2)
         local xd, yd = x:to(dev), y:to(dev)
         local losses = S.train_steps(dev, 20, opt, function() return fnn.nn.cross_entropy(model(xd), yd) end)
         local ws = {}
         for i, p in ipairs(model:parameters()) do
            assert.equals(dev, p:tensor():device())
            ws[i] = fnn.tensor(p:tensor():to('cpu'):to_flat(), p:tensor():shape())
         end
         return losses, ws
      end
      local want, wws = train(Device.cpu())
      local got, gws = train(gpu)
      for step = 1, 20 do
         assert.is_true(math.abs(got[step] - want[step]) <= 1e-6 + 1e-4 * math.abs(want[step]),
                        ('mlp: step %d: cpu loss %.9g, cuda %.9g'):format(step, want[step], got[step]))
      end
      assert.is_true(want[20] < want[1] * 0.8, 'mlp: the run did not learn')
      for i = 1, #wws do assert_close(wws[i], gws[i], 1e-4, 1e-4, ('mlp: parameter %d after 20 steps'):format(i)) end
   end)

   -- 3 SGD steps of BatchNorm2d-ReLU-MaxPool2d against a fixed target (mse) from the same initial
   -- weights: every step's loss within rtol 1e-4, the running stats (updated on the device) and the
   -- weights after the run within rtol 1e-4
   case('nn.BatchNorm2d(4) - ReLU - MaxPool2d(2), mse, SGD: 3 steps, same losses and running stats', function()
      fnn.manual_seed(11)
      local x, t = uniform({6, 4, 8, 8}, -1, 3), uniform({6, 4, 4, 4}, 0, 1)
      if not gpu then return skip('batch_norm loop', {x, t}) end
      local function train(dev)
         local bn = fnn.nn.BatchNorm2d(4)
         local model = fnn.nn.Sequential(bn, fnn.nn.ReLU(), fnn.nn.MaxPool2d(2))
         model:to_device(dev)
         local opt = fnn.optim.SGD(model:parameters(), 0.1)
         local xd, td = x:to(dev), t:to(dev)
         local losses = S.train_steps(dev, 3, opt, function() return fnn.nn.mse(model(xd), td) end)
         assert.equals(dev, bn.running_mean:device())
         local out = {bn.running_mean:to('cpu'), bn.running_var:to('cpu')}
         for _, p in ipairs(model:parameters()) do out[#out + 1] = p:tensor():to('cpu') end
         return losses, out
      end
      local want, wt = train(Device.cpu())
      local got, gt = train(gpu)
      for step = 1, 3 do
         assert.is_true(math.abs(got[step] - want[step]) <= 1e-6 + 1e-4 * math.abs(want[step]),
                        ('batch_norm loop: step %d: cpu loss %.9g, cuda %.9g'):format(step, want[step], got[step]))
      end
      assert.is_true(want[3] < want[1], 'batch_norm loop: the run did not learn')
      local names = {'running_mean', 'running_var', 'weight', 'bias'}
      for i = 1, #wt do assert_close(wt[i], gt[i], 1e-5, 1e-4, 'batch_norm loop: ' .. names[i]) end
   end)
end)

describe('cuda devices and memory', function()
   case('names devices and refuses to mix them', function()
      assert.equals('cpu', tostring(Device.cpu()))
      if not gpu then
         assert.is_truthy(why:find(reason), why)
         assert.equals(Device.cpu(), Device.best())
         assert.equals(0, Device.count('cuda'))
         return
      end
      assert.equals('cuda:0', tostring(gpu))
      assert.equals(gpu, Device.best())
      local x = fnn.ones(4, 5)
      assert.error_matches(function() return x:to(gpu) + x end, 'add: tensors on different devices')
      assert.error_matches(function() return x:to(gpu):exp() + x end, 'add: tensors on different devices')
      assert.error_matches(function() return x:to(gpu):maximum(x) end, 'maximum: tensors on different devices')
      assert.error_matches(function() return x:to(gpu):item() end, 'on a GPU')
      local n = Device.count('cuda')
      local none, err = Device.cuda(n)
      assert.is_nil(none)
      assert.is_truthy(err:find(('no GPU %d; this machine has %d'):format(n, n), 1, true), err)
   end)

   case('conv2d, conv_transpose1d and batch_norm refuse mixed devices, naming both', function()
      local x, w, b = uniform({2, 3, 5, 5}, -1, 1), uniform({4, 3, 3, 3}, -1, 1), uniform({4}, -1, 1)
      if not gpu then return skip('mixed devices', {x, w, b}) end
      local xg, wg = x:to(gpu), w:to(gpu)
      assert.error_matches(function() return fnn.conv2d(xg, w, nil) end,
                           'conv2d: tensors on different devices %(%[2,3,5,5%] cuda:0 and %[4,3,3,3%] cpu%)')
      assert.error_matches(function() return fnn.conv2d(xg, wg, b) end,
                           'conv2d: tensors on different devices %(%[2,3,5,5%] cuda:0 and %[4%] cpu%)')
      local x1, w1 = uniform({2, 3, 7}, -1, 1), uniform({3, 2, 3}, -1, 1)
      assert.error_matches(function() return fnn.conv_transpose1d(x1, w1:to(gpu), nil) end,
                           'conv_transpose1d: tensors on different devices %(%[2,3,7%] cpu and %[3,2,3%] cuda:0%)')
      local xb, wb = uniform({4, 3}, -1, 1), uniform({3}, 0.5, 1.5)
      assert.error_matches(function() return fnn.batch_norm(xb:to(gpu), nil, nil, wb, nil, {training = true}) end,
                           'batch_norm: tensors on different devices %(%[4,3%] cuda:0 and %[3%] cpu%)')
      assert.error_matches(function()
         return fnn.batch_norm(xb:to(gpu), fnn.zeros(3), fnn.ones(3):to(gpu), nil, nil, {training = false})
      end, 'batch_norm: tensors on different devices')
   end)

   case('caches freed GPU blocks and gives them back on empty_cache', function()
      collectgarbage(); collectgarbage()   -- earlier cases' GPU garbage must not land in the cache mid-test
      local stats = ffi.new('int64_t[2]')
      local rc = C.fnn_cuda_memory_stats(stats, stats + 1)
      if gpu and os.getenv('FASTNN_EMULATED_GPU') then   -- spec/gpu/emulate.sh: malloc, no cache to check
         print('caching allocator: skipped under host emulation (spec/gpu/emulate.sh)')
         assert.equals(0, rc)
         return
      end
      if not gpu then
         if built then
            assert.equals(0, rc)
            assert.equals(0, tonumber(stats[0]))
         else
            assert.equals(-4, rc)   -- FNN_STATUS_DEVICE
            assert.is_truthy(ffi.string(C.fnn_last_error()):find('no CUDA backend', 1, true))
         end
         return
      end
      C.fnn_cuda_empty_cache()
      C.fnn_cuda_memory_stats(stats, stats + 1)
      local live0 = tonumber(stats[0])
      local x = fnn.ones(256, 1024):to(gpu)                 -- 1 MiB
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.is_true(tonumber(stats[0]) >= live0 + 1024 * 1024)
      x:free()
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.equals(live0, tonumber(stats[0]))
      assert.is_true(tonumber(stats[1]) >= 1024 * 1024)    -- kept for the next allocation
      local y = fnn.ones(256, 1024):to(gpu)                 -- same size: served from the cache
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.equals(0, tonumber(stats[1]))
      y:free()
      C.fnn_cuda_empty_cache()
      C.fnn_cuda_memory_stats(stats, stats + 1)
      assert.equals(0, tonumber(stats[1]))
   end)
end)

-- every op the registry says the CUDA backend implements has a case in spec/cases/<its family>.lua,
-- which the case tables' describe above runs on both sides (the case tables now cover every family,
-- so no parity file's text needs reading), and has_cuda cannot run ahead of them
describe('cuda coverage', function()
   it('every has_cuda op of the registry has a case in its family\'s case table', function()
      local missing, with, without = {}, 0, 0
      for _, op in ipairs(fnn.ops()) do
         if op.has_cuda then
            with = with + 1
            local ok, cases = pcall(require, 'cases.' .. op.family)
            local found = false
            for _, c in ipairs(ok and cases or {}) do found = found or c.op == op.name end
            if not found then missing[#missing + 1] = op.family .. '.' .. op.name end
         else without = without + 1 end
      end
      assert.same({}, missing)
      if C.fnn_cuda_built() ~= 0 then
         assert.is_true(with >= 100, 'fewer has_cuda ops than the backend implements')
      else
         assert.equals(0, with)   -- has_cuda speaks of this build: no backend, no op on it
      end
      print(('cuda coverage: %d ops on cuda, %d not yet'):format(with, without))
   end)
end)
