-- CUDA parity of the pooling, upsampling and batch_norm family (cuda/pool.cu, cuda/batch_norm.cu):
-- 'max_pool1d', 'max_pool2d', 'max_pool3d', 'avg_pool1d', 'avg_pool2d', 'avg_pool3d',
-- 'adaptive_avg_pool2d', 'upsample_nearest' (1..3 spatial dims), 'upsample_bilinear2d' (align_corners
-- both ways) and 'batch_norm' (training with batch statistics, eval with running stats, with and
-- without affine), each forward and the gradient of every input, on the CPU and on GPU 0 from the
-- same inputs; and nn.BatchNorm2d-ReLU-MaxPool2d trained 3 SGD steps on both (losses, running stats,
-- weights).
--
-- Tolerances, |gpu - cpu| <= atol + rtol |cpu|:
--   max pooling, adaptive_avg_pool2d, upsample_nearest, upsample_bilinear2d: EXACT (atol 0, rtol
--     1e-6): the kernels make the CPU's float operations in the CPU's order (window scans in
--     row-major order; backward gathers over the outputs in the order the CPU adds them), with
--     __fdiv_rn / __fmul_rn / __fadd_rn where fast math would change a division or contract an FMA;
--   avg pooling: FAST (atol 1e-6, rtol 2e-5): the CPU's 2x2 stride-2 path sums a window pairwise,
--     the kernel in row-major order;
--   batch_norm: atol 1e-5, rtol 1e-5, gradients 10x (per-channel sums in double in another order:
--     the CPU's shifted one-pass sums, the GPU's two-pass block reduction), as the norm family;
--   the BatchNorm2d run: every step's loss, the running stats and the weights within rtol 1e-4.
-- No kernel here uses atomics: every backward is a gather, so the GPU's results are deterministic.
-- Sizes: output lengths of 1, 127, 128, 129, 1023, 1024, 1025 along the last dim of each pool and
-- resize (a thread per output element forward, per input element backward), channels across the
-- same edges for batch_norm in thread mode (a thread per channel), N S across its block mode's edges
-- (128 elements a channel: a block each, 32 to 256 threads);
-- inputs non-contiguous (transposed, permuted, narrowed) where marked.
--
-- Without a usable GPU every case prints "<case>: skipped: no CUDA device" and checks why (see
-- spec/cuda_support.lua). spec/gpu/emulate.sh runs this file against the kernels emulated on the host.
local fnn = require 'fastnn'
local S = require 'cuda_support'
local gpu, SIZES, uniform, case, skip, parity, parity_grad, assert_close = S.gpu, S.SIZES, S.uniform, S.case,
   S.skip, S.parity, S.parity_grad, S.assert_close
local EXACT, FAST = S.EXACT, S.FAST
local BN = {1e-5, 1e-5, 10}

local function opts(s, p, ceil, cip)
   return {stride = s, padding = p, ceil_mode = ceil, count_include_pad = cip}
end

describe('cuda parity: max pooling 1-3d (forward, argmax, backward)', function()
   for _, n in ipairs(SIZES) do
      case(('max_pool1d kernel 2 to %d outputs; max_pool2d 1x2 windows to %d columns'):format(n, n), function()
         parity_grad('max_pool1d', {uniform({2, 3, 2 * n}, -2, 2)}, function(x) return x:max_pool1d(2) end,
                     EXACT[1], EXACT[2])
         parity_grad('max_pool2d', {uniform({1, 2, 2, 2 * n}, -2, 2)}, function(x) return x:max_pool2d({1, 2}) end,
                     EXACT[1], EXACT[2])
      end)
   end
   for _, c in ipairs{{3, 2, 1, false}, {3, 2, 1, true}, {4, 3, 2, true}, {3, 1, 1, false}, {2, 2, 0, true}} do
      local k, s, p, ceil = c[1], c[2], c[3], c[4]
      case(('max_pool1d/2d/3d kernel %d stride %d padding %d ceil_mode %s'):format(k, s, p, tostring(ceil)), function()
         parity_grad('max_pool1d', {uniform({2, 3, 11}, -2, 2)}, function(x) return x:max_pool1d(k, opts(s, p, ceil)) end,
                     EXACT[1], EXACT[2])
         parity_grad('max_pool2d', {uniform({2, 3, 9, 10}, -2, 2)},
                     function(x) return x:max_pool2d(k, opts(s, p, ceil)) end, EXACT[1], EXACT[2])
         parity_grad('max_pool3d', {uniform({2, 2, 7, 6, 8}, -2, 2)},
                     function(x) return x:max_pool3d(k, opts(s, p, ceil)) end, EXACT[1], EXACT[2])
      end)
   end
   case('max_pool2d 2x2 stride 2 (the CPU fast path), odd sizes, unbatched; max_pool3d {2,3,2} strides {2,1,2}',
        function()
      parity_grad('max_pool2d', {uniform({3, 2, 9, 7}, -2, 2)}, function(x) return x:max_pool2d(2) end,
                  EXACT[1], EXACT[2])
      parity_grad('max_pool2d', {uniform({3, 8, 6}, -2, 2)}, function(x) return x:max_pool2d(2) end, EXACT[1], EXACT[2])
      parity_grad('max_pool3d', {uniform({1, 2, 6, 5, 7}, -2, 2)},
                  function(x) return x:max_pool3d({2, 3, 2}, {stride = {2, 1, 2}, padding = {1, 1, 0}}) end,
                  EXACT[1], EXACT[2])
   end)
   case('max_pool ties: on a constant input the first maximum of each window wins (overlapping windows)', function()
      for _, x in ipairs{fnn.ones(2, 3, 10), fnn.ones(1, 2, 6, 7) * 3} do
         if x.ndim == 3 then
            parity_grad('max_pool1d ties', {x}, function(t) return t:max_pool1d(3, opts(1, 1)) end, EXACT[1], EXACT[2])
         else
            parity_grad('max_pool2d ties', {x}, function(t) return t:max_pool2d(3, opts(2, 1, true)) end,
                        EXACT[1], EXACT[2])
         end
      end
      parity_grad('max_pool3d ties', {fnn.zeros(1, 1, 4, 5, 4)}, function(t) return t:max_pool3d(2, opts(1, 1)) end,
                  EXACT[1], EXACT[2])
      -- ties among distinct values: every window holds repeats of 0, 1, 2
      local v = {}
      for i = 1, 2 * 2 * 8 * 8 do v[i] = (i * 7919) % 3 end
      parity_grad('max_pool2d ties', {fnn.tensor(v, {2, 2, 8, 8})},
                  function(t) return t:max_pool2d(3, opts(1, 1)) end, EXACT[1], EXACT[2])
   end)
   case('max_pool of non-contiguous inputs (transposed, permuted, narrowed)', function()
      parity_grad('max_pool1d', {uniform({2, 11, 3}, -2, 2)},
                  function(x) return x:transpose(2, 3):max_pool1d(3, opts(2, 1, true)) end, EXACT[1], EXACT[2])
      parity_grad('max_pool2d', {uniform({2, 3, 10, 9}, -2, 2)},
                  function(x) return x:transpose(3, 4):max_pool2d(3, opts(2, 1)) end, EXACT[1], EXACT[2])
      parity_grad('max_pool3d', {uniform({1, 2, 5, 4, 6}, -2, 2)},
                  function(x) return x:permute(1, 2, 5, 3, 4):max_pool3d({2, 3, 2}, opts({2, 1, 2}, {1, 1, 0})) end,
                  EXACT[1], EXACT[2])
      parity_grad('max_pool2d', {uniform({2, 3, 9, 12}, -2, 2)},
                  function(x) return x:narrow(4, 2, 9):max_pool2d(2) end, EXACT[1], EXACT[2])
   end)
   case('max_pool propagates nan and -inf as the CPU', function()
      local x = uniform({1, 1, 6, 6}, -2, 2)
      local v = x:to_flat()
      v[8], v[15], v[16] = 0 / 0, -math.huge, 0 / 0
      parity('max_pool2d nan', {fnn.tensor(v, {1, 1, 6, 6})}, function(t) return t:max_pool2d(3, opts(1, 1)) end,
             EXACT[1], EXACT[2])
   end)
end)

describe('cuda parity: avg pooling 1-3d (count_include_pad, ceil_mode)', function()
   for _, n in ipairs(SIZES) do
      case(('avg_pool1d kernel 2 to %d outputs; avg_pool2d 2x2 to %d columns'):format(n, n), function()
         parity_grad('avg_pool1d', {uniform({2, 3, 2 * n}, -2, 2)}, function(x) return x:avg_pool1d(2) end,
                     FAST[1], FAST[2])
         parity_grad('avg_pool2d', {uniform({1, 2, 2, 2 * n}, -2, 2)}, function(x) return x:avg_pool2d(2) end,
                     FAST[1], FAST[2])
      end)
   end
   for _, c in ipairs{{3, 2, 1, false, true}, {3, 2, 1, false, false}, {3, 2, 1, true, true}, {3, 2, 1, true, false},
                      {4, 3, 2, true, false}, {2, 1, 1, false, true}} do
      local k, s, p, ceil, cip = c[1], c[2], c[3], c[4], c[5]
      case(('avg_pool1d/2d/3d kernel %d stride %d padding %d ceil_mode %s count_include_pad %s'):format(
              k, s, p, tostring(ceil), tostring(cip)), function()
         parity_grad('avg_pool1d', {uniform({2, 3, 11}, -2, 2)},
                     function(x) return x:avg_pool1d(k, opts(s, p, ceil, cip)) end, FAST[1], FAST[2])
         parity_grad('avg_pool2d', {uniform({2, 3, 9, 10}, -2, 2)},
                     function(x) return x:avg_pool2d(k, opts(s, p, ceil, cip)) end, FAST[1], FAST[2])
         parity_grad('avg_pool3d', {uniform({2, 2, 7, 6, 8}, -2, 2)},
                     function(x) return x:avg_pool3d(k, opts(s, p, ceil, cip)) end, FAST[1], FAST[2])
      end)
   end
   case('avg_pool of non-contiguous inputs, unbatched, anisotropic windows', function()
      parity_grad('avg_pool1d', {uniform({2, 11, 3}, -2, 2)},
                  function(x) return x:transpose(2, 3):avg_pool1d(3, opts(2, 1, true, false)) end, FAST[1], FAST[2])
      parity_grad('avg_pool2d', {uniform({3, 10, 9}, -2, 2)},
                  function(x) return x:transpose(2, 3):avg_pool2d({3, 2}, opts({2, 1}, {1, 0})) end, FAST[1], FAST[2])
      parity_grad('avg_pool3d', {uniform({1, 2, 5, 4, 6}, -2, 2)},
                  function(x) return x:permute(1, 2, 5, 3, 4):avg_pool3d({2, 3, 2}, opts({2, 1, 2}, {1, 1, 0}, true)) end,
                  FAST[1], FAST[2])
   end)
end)

describe('cuda parity: adaptive_avg_pool2d', function()
   for _, c in ipairs{{{2, 3, 7, 9}, {3, 4}}, {{2, 3, 7, 9}, {5, 2}}, {{2, 3, 7, 9}, {7, 9}}, {{1, 2, 5, 6}, {9, 11}},
                      {{2, 4, 10, 10}, {1, 1}}, {{3, 6, 5}, {4, 3}}} do
      local shape, size = c[1], c[2]
      case(('adaptive_avg_pool2d %s -> %dx%d'):format(table.concat(shape, 'x'), size[1], size[2]), function()
         parity_grad('adaptive_avg_pool2d', {uniform(shape, -2, 2)}, function(x) return x:adaptive_avg_pool2d(size) end,
                     EXACT[1], EXACT[2])
      end)
   end
   for _, n in ipairs{127, 128, 129, 1023, 1024, 1025} do
      case(('adaptive_avg_pool2d [1,2,3,1100] -> 2x%d (non-dividing windows)'):format(n), function()
         parity_grad('adaptive_avg_pool2d', {uniform({1, 2, 3, 1100}, -2, 2)},
                     function(x) return x:adaptive_avg_pool2d({2, n}) end, EXACT[1], EXACT[2])
      end)
   end
   case('adaptive_avg_pool2d of a transposed input', function()
      parity_grad('adaptive_avg_pool2d', {uniform({2, 3, 9, 7}, -2, 2)},
                  function(x) return x:transpose(3, 4):adaptive_avg_pool2d({4, 5}) end, EXACT[1], EXACT[2])
   end)
end)

describe('cuda parity: upsample_nearest (1-3d) and upsample_bilinear2d', function()
   for _, n in ipairs(SIZES) do
      case(('upsample nearest and bilinear to %d columns'):format(n), function()
         parity_grad('upsample_nearest', {uniform({2, 2, 5}, -2, 2)}, function(x) return x:upsample{size = n} end,
                     EXACT[1], EXACT[2])
         parity_grad('upsample_bilinear2d', {uniform({1, 2, 3, 7}, -2, 2)},
                     function(x) return x:upsample{size = {2, n}, mode = 'bilinear'} end, EXACT[1], EXACT[2])
         parity_grad('upsample_bilinear2d', {uniform({1, 2, 3, 7}, -2, 2)},
                     function(x) return x:upsample{size = {4, n}, mode = 'bilinear', align_corners = true} end,
                     EXACT[1], EXACT[2])
      end)
   end
   for _, c in ipairs{{{2, 3, 4}, {7}}, {{2, 3, 9}, {4}}, {{1, 2, 3, 4}, {6, 8}}, {{1, 2, 5, 7}, {2, 3}},
                      {{2, 3, 4}, {5, 3}}, {{1, 2, 2, 3, 2}, {3, 5, 4}}, {{1, 1, 4, 5, 6}, {2, 3, 3}}} do
      local shape, size = c[1], c[2]
      case(('upsample nearest %s -> %s'):format(table.concat(shape, 'x'), table.concat(size, 'x')), function()
         parity_grad('upsample_nearest', {uniform(shape, -2, 2)}, function(x) return x:upsample{size = size} end,
                     EXACT[1], EXACT[2])
      end)
   end
   case('upsample nearest by scale factors 2 and 3, of a transposed input', function()
      parity_grad('upsample_nearest', {uniform({2, 3, 4, 5}, -2, 2)},
                  function(x) return x:upsample{scale_factor = {2, 3}} end, EXACT[1], EXACT[2])
      parity_grad('upsample_nearest', {uniform({2, 3, 5, 4}, -2, 2)},
                  function(x) return x:transpose(3, 4):upsample{scale_factor = 2} end, EXACT[1], EXACT[2])
   end)
   for _, align in ipairs{false, true} do
      for _, c in ipairs{{{1, 2, 3, 4}, {7, 9}}, {{1, 2, 5, 7}, {2, 3}}, {{2, 3, 4, 4}, {4, 4}}, {{1, 1, 4, 6}, {1, 1}},
                         {{1, 1, 1, 5}, {3, 8}}, {{2, 1, 6, 3}, {4, 9}}} do
         local shape, size = c[1], c[2]
         case(('upsample bilinear %s -> %s, align_corners %s'):format(table.concat(shape, 'x'), table.concat(size, 'x'),
                                                                       tostring(align)), function()
            parity_grad('upsample_bilinear2d', {uniform(shape, -2, 2)},
                        function(x) return x:upsample{size = size, mode = 'bilinear', align_corners = align} end,
                        EXACT[1], EXACT[2])
         end)
      end
      case(('upsample bilinear of a transposed input, scale factor 2, align_corners %s'):format(tostring(align)),
           function()
         parity_grad('upsample_bilinear2d', {uniform({2, 3, 6, 5}, -2, 2)},
                     function(x) return x:transpose(3, 4):upsample{scale_factor = 2, mode = 'bilinear',
                                                                   align_corners = align} end, EXACT[1], EXACT[2])
      end)
   end
end)

-- batch_norm through fnn.batch_norm: y's parity and every gradient; training also the batch mean and
-- unbiased variance (what the layer blends into its running stats)
local function bn_train(shape, affine, label)
   local C = shape[2]
   local ins = {uniform(shape, -2, 2) * 1.5 + 0.5}
   if affine then ins[2], ins[3] = uniform({C}, 0.5, 1.5), uniform({C}, -1, 1) end
   parity_grad(label, ins, function(x, w, b) return fnn.batch_norm(x, nil, nil, w, b, {training = true}) end,
               BN[1], BN[2], BN[3])
   for k = 2, 3 do
      parity(label .. (k == 2 and ' batch mean' or ' batch var'), {ins[1]}, function(x)
         return select(k, fnn.batch_norm(x, nil, nil, nil, nil, {training = true}))
      end, BN[1], BN[2])
   end
end
local function bn_eval(shape, affine, label)
   local C = shape[2]
   local ins = {uniform(shape, -2, 2), uniform({C}, -0.5, 0.5), uniform({C}, 0.5, 2)}
   if affine then ins[4], ins[5] = uniform({C}, 0.5, 1.5), uniform({C}, -1, 1) end
   parity_grad(label, ins, function(x, rm, rv, w, b) return fnn.batch_norm(x, rm, rv, w, b, {training = false}) end,
               BN[1], BN[2], BN[3])
end

describe('cuda parity: batch_norm, training and eval, with and without affine', function()
   for _, C in ipairs{1, 127, 128, 129, 255, 256, 257, 1025} do   -- a thread per channel: C threads
      case(('batch_norm [4,%d] training and eval, affine and not'):format(C), function()
         bn_train({4, C}, true, 'batch_norm')
         bn_train({4, C}, false, 'batch_norm plain')
         bn_eval({4, C}, true, 'batch_norm eval')
         bn_eval({4, C}, false, 'batch_norm eval plain')
      end)
   end
   -- N L: 30, 32, 34 (a thread per channel), 128, 130 (a block of 128, 160 threads), 256, 258, 1400 (256)
   for _, L in ipairs{15, 16, 17, 64, 65, 128, 129, 700} do
      case(('batch_norm [2,3,%d] training and eval'):format(L), function()
         bn_train({2, 3, L}, true, 'batch_norm')
         bn_eval({2, 3, L}, true, 'batch_norm eval')
         bn_train({2, 3, L}, false, 'batch_norm plain')
      end)
   end
   case('batch_norm [4,3,5,6] and [2,5,3,4,3] training and eval; eval without affine', function()
      bn_train({4, 3, 5, 6}, true, 'batch_norm')
      bn_eval({4, 3, 5, 6}, true, 'batch_norm eval')
      bn_eval({4, 3, 5, 6}, false, 'batch_norm eval plain')
      bn_train({2, 5, 3, 4, 3}, false, 'batch_norm plain')
   end)
   case('batch_norm of a non-contiguous input (a permuted [4,5,6,3]), weight only', function()
      parity_grad('batch_norm', {uniform({4, 5, 6, 3}, -2, 2), uniform({3}, 0.5, 1.5)},
                  function(x, w) return fnn.batch_norm(x:permute(1, 4, 2, 3), nil, nil, w, nil, {training = true}) end,
                  BN[1], BN[2], BN[3])
      parity_grad('batch_norm eval', {uniform({4, 5, 6, 3}, -2, 2), uniform({3}, -0.5, 0.5), uniform({3}, 0.5, 2)},
                  function(x, rm, rv) return fnn.batch_norm(x:permute(1, 4, 2, 3), rm, rv, nil, nil, {training = false}) end,
                  BN[1], BN[2], BN[3])
   end)
   case('batch_norm refuses to mix devices, naming both', function()
      local x, w = uniform({4, 3}, -1, 1), uniform({3}, 0.5, 1.5)
      if not gpu then return skip('batch_norm devices', {x, w}) end
      assert.error_matches(function() return fnn.batch_norm(x:to(gpu), nil, nil, w, nil, {training = true}) end,
                           "batch_norm: tensors on different devices %(%[4,3%] cuda:0 and %[3%] cpu%)")
      assert.error_matches(function()
         return fnn.batch_norm(x:to(gpu), fnn.zeros(3), fnn.ones(3):to(gpu), nil, nil, {training = false})
      end, 'batch_norm: tensors on different devices')
   end)
end)

-- 3 SGD steps of BatchNorm2d-ReLU-MaxPool2d against a fixed target (mse) on the CPU and on the GPU,
-- from the same initial weights: the losses, the running stats and the weights after the run agree
describe('cuda parity: nn.BatchNorm2d training loop', function()
   case('nn.BatchNorm2d(4) - ReLU - MaxPool2d(2), mse, SGD: 3 steps, same losses and running stats', function()
      fnn.manual_seed(11)
      local x, t = uniform({6, 4, 8, 8}, -1, 3), uniform({6, 4, 4, 4}, 0, 1)
      if not gpu then return skip('batch_norm loop', {x, t}) end
      local function train(dev)
         local bn = fnn.nn.BatchNorm2d(4)
         local model = fnn.nn.Sequential(bn, fnn.nn.ReLU(), fnn.nn.MaxPool2d(2))
         model:to_device(dev)
         local opt = fnn.optim.SGD(model:parameters(), 0.1)
         local xd, td, losses = x:to(dev), t:to(dev), {}
         for step = 1, 3 do
            local loss = fnn.nn.mse(model(xd), td)
            assert.equals(dev, loss:device())
            opt:zero_grad()
            loss:backward()
            opt:step()
            losses[step] = loss:to('cpu'):item()
         end
         assert.equals(dev, bn.running_mean:device())
         local out = {bn.running_mean:to('cpu'), bn.running_var:to('cpu')}
         for _, p in ipairs(model:parameters()) do out[#out + 1] = p:tensor():to('cpu') end
         return losses, out
      end
      local want, wt = train(fnn.Device.cpu())
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
