-- CUDA parity of the bfloat16 dtype (issue 31's CUDA part): the casts between float32, bfloat16 and
-- int64 run on the device (cuda/cast.cu, core/bf16.h's rounding: to nearest, ties to even, NaN kept),
-- so every op takes bf16 tensors there as on the CPU (widened exactly, computed in float32, rounded
-- back when every float input was bf16), gradients flow in float32, and fnn.autocast('bf16') runs a
-- model on the GPU with bf16 activations and float32 parameters and gradients.
-- Tolerances: casts are bit-exact (one rounding, the same formula on both sides); an op's bf16 result
-- may differ by one bf16 step where the device's fast-math float32 value (a few ulp off the CPU's)
-- sits next to a rounding boundary: rtol 2^-7 (bf16 keeps 8 significant bits), atol 1e-6.
-- Without a GPU (or a CUDA build) each case checks the reason given instead (spec/cuda_support.lua).
local fnn = require 'fastnn'
local S = require 'cuda_support'
local gpu, case, parity, parity_grad, uniform, assert_close = S.gpu, S.case, S.parity, S.parity_grad, S.uniform,
   S.assert_close
local SIZES = S.SIZES
local BF16 = {1e-6, 2 ^ -7}

-- values that round in every way: exact bf16 values, ties (to even, both ways), nan, +-inf, a value
-- past bf16's largest (rounds to inf), subnormals, and random ones
local function hard(n)
   local special = {1, 1.00390625, 1.01171875, -1.00390625, 0 / 0, 1 / 0, -1 / 0, 3.4e38, -3.4e38, 1e-40, -1e-40,
                    0, -0, 65535, 2 ^ -130}
   local r, v = uniform({n}, -3, 3):to_flat(), {}
   for i = 1, n do v[i] = special[i] or r[i] end
   return fnn.tensor(v, {n})
end

describe('cuda parity: bfloat16 casts on the device', function()
   for _, n in ipairs(SIZES) do
      case(('float32 -> bf16 -> float32, size %d (ties, nan, inf, overflow, subnormals): bit-exact'):format(n),
           function()
         parity('bf16', {hard(n)}, function(x)
            local b = x:bf16()
            assert.equals('bfloat16', b:dtype())
            return b:float()
         end, 0, 0)
      end)
   end
   case('bf16 <-> int64: whole numbers both ways, exact', function()
      parity('long', {fnn.tensor{-3, 0, 7, 256, 257, 1e6}}, function(x) return x:bf16():long():bf16():float() end, 0, 0)
   end)
   case('a bf16 tensor moved between devices keeps its dtype and bits', function()
      local x = hard(129):bf16()
      if not gpu then return S.skip('bf16 round trip', {x}) end
      local back = x:to('cuda:0'):to('cpu')
      assert.equals('bfloat16', back:dtype())
      assert_close(x:float(), back:float(), 0, 0, 'round trip')
   end)
end)

describe('cuda parity: ops on bfloat16 tensors', function()
   for _, n in ipairs{1, 129, 1025} do
      case(('unary ops on bf16 [%d,3]^T give bf16 within a bf16 step'):format(n), function()
         for _, f in ipairs{function(a) return a:exp() end, function(a) return a:tanh() end,
                            function(a) return a:gelu() end, function(a) return a:relu() end} do
            parity('bf16 unary', {uniform({n, 3}, -2, 2)}, function(x)
               local y = f(x:bf16():t())
               assert.equals('bfloat16', y:dtype())
               return y:float()
            end, BF16[1], BF16[2])
         end
      end)
      case(('binary ops: bf16 with bf16 is bf16, with float32 is float32, size %d'):format(n), function()
         parity('bf16 binary', {uniform({n, 3}, -2, 2), uniform({3}, 0.5, 2)}, function(a, b)
            local both = a:bf16() * b:bf16() + a:bf16()
            local mixed = a:bf16() / b
            assert.equals('bfloat16', both:dtype())
            assert.equals('float32', mixed:dtype())
            return fnn.cat({both:float(), mixed}, 1)
         end, BF16[1], BF16[2])
      end)
   end
   case('reductions and softmax of a bf16 tensor accumulate in float32', function()
      parity('bf16 reductions', {uniform({7, 300}, -2, 2)}, function(x)
         local b = x:bf16()
         return fnn.cat({b:sum(2):float(), b:softmax(2):float():sum(2), b:mean(2):float()}, 1)
      end, 1e-4, BF16[2])
   end)
   case('matmul of bf16 operands gives bf16', function()
      parity('bf16 matmul', {uniform({33, 70}, -1, 1), uniform({70, 20}, -1, 1)}, function(a, b)
         local y = a:bf16():matmul(b:bf16())
         assert.equals('bfloat16', y:dtype())
         return y:float()
      end, 1e-3, BF16[2])
   end)
   case('pools of a bf16 tensor: the CPU\'s bf16 row against the device\'s widening path, gradients float32', function()
      -- the CUDA pool rows take float32 only (no forward_bf16): the wrapper widens there, the CPU pools
      -- bf16 in C; both give the float32 pool of the same values rounded (max exact)
      parity_grad('bf16 max_pool2d', {uniform({2, 3, 9, 7}, -2, 2)}, function(x)
         local y = fnn.max_pool2d(x:bf16(), 2)
         assert.equals('bfloat16', y:dtype())
         return y:float()
      end, 0, 0, 2)
      parity_grad('bf16 avg_pool2d', {uniform({2, 3, 9, 7}, -2, 2)}, function(x)
         local y = fnn.nn.AvgPool2d(3, {stride = 2, padding = 1}):forward(x:bf16())
         assert.equals('bfloat16', y:dtype())
         return y:float()
      end, BF16[1], BF16[2], 2)
   end)
   case('the C pools refuse a bf16 tensor on the device by name (the row takes float32 only)', function()
      if not gpu then return S.skip('bf16 pool refusal', {uniform({1, 1, 4, 4}, -1, 1)}) end
      local T = require 'fastnn.tensor'
      local out = T.new()
      local x = uniform({1, 1, 4, 4}, -1, 1):to('cuda:0'):bf16()
      assert.are_not.equal(0, T.C.fnn_max_pool2d(out, x, 2, 2, 2, 2, 0, 0, 0))
      assert.matches('max_pool2d: the cuda:0 backend takes float32 only, got a bfloat16 tensor',
                     require('ffi').string(T.C.fnn_last_error()), 1, true)
   end)
   case('gradients through bf16 casts are float32 on the device', function()
      parity_grad('bf16 grad', {uniform({5, 4}, -1, 1), uniform({4}, -1, 1)}, function(x, w)
         return (x:bf16() * w:bf16()):float():tanh()
      end, BF16[1], BF16[2], 2)
   end)
end)

describe('cuda parity: fnn.autocast on the device', function()
   case('a Linear-GELU-Linear step under autocast: bf16 activations, float32 gradients, as on the CPU', function()
      if not gpu then return S.skip('autocast', {uniform({4, 8}, -1, 1)}) end
      local function run(device)
         fnn.manual_seed(7)
         local net = fnn.nn.Sequential(fnn.nn.Linear(8, 16), fnn.nn.GELU(), fnn.nn.Linear(16, 3))
         if device ~= 'cpu' then net:to_device(gpu) end
         fnn.manual_seed(8)
         local x = uniform({4, 8}, -1, 1):to(device)
         local y = fnn.autocast('bf16', function() return net:forward(x) end)
         assert.equals('bfloat16', y:dtype())
         y:float():sum():backward()
         local grads = {}
         for i, p in ipairs(net:parameters()) do
            assert.equals('float32', p:grad():dtype())
            grads[i] = p:grad():to('cpu')
         end
         return y:float():to('cpu'), grads
      end
      local want, wg = run('cpu')
      local got, gg = run('cuda:0')
      assert_close(want, got, 1e-3, 2 ^ -6, 'autocast output')
      for i = 1, #wg do assert_close(wg[i], gg[i], 1e-3, 2 ^ -6, ('autocast grad %d'):format(i)) end
   end)
end)

-- fnn.set_float32_precision('bf16') on the device: the GEMM-bound families multiply bf16-rounded
-- operands with float32 sums (cublasGemmStridedBatchedEx; the emulation rounds in its loop), as the
-- CPU does, so both sides agree to float32 sum order (1e-5), far closer than either is to the
-- float32 products: the distance to those (checked larger than 1e-4) shows the rounding happened.
describe('cuda parity: set_float32_precision(bf16) on the device', function()
   local function under_bf16(f)
      local saved = fnn.get_float32_precision()
      fnn.set_float32_precision('bf16')
      local ok, r = pcall(f)
      fnn.set_float32_precision(saved)
      if not ok then error(r, 0) end
      return r
   end
   local FAMILIES = {
      {'matmul', function() return uniform({37, 300}, -1, 1), uniform({300, 21}, -1, 1) end,
       function(a, b) return a:matmul(b) end},
      {'bmm', function() return uniform({3, 17, 90}, -1, 1), uniform({3, 90, 13}, -1, 1) end,
       function(a, b) return fnn.bmm(a, b) end},
      {'conv2d', function() return uniform({2, 6, 9, 9}, -1, 1), uniform({5, 6, 3, 3}, -1, 1) end,
       function(x, w) return fnn.conv2d(x, w) end},
      {'attention', function() return uniform({2, 2, 9, 32}, -1, 1) end,
       function(q) return fnn.attention(q, q * 0.5, q:tanh(), {causal = true}) end},
   }
   for _, f in ipairs(FAMILIES) do
      case(f[1] .. ': bf16 operands on both sides, forward and gradients', function()
         local inputs = {f[2]()}
         if not gpu then return S.skip(f[1], inputs) end
         under_bf16(function() parity_grad(f[1], inputs, f[3], 1e-5, 1e-4, 4) end)
         local exact = f[3](unpack(inputs))
         local rounded = under_bf16(function() return f[3](unpack(S.to_gpu(inputs))) end):to('cpu')
         local far = 0
         local e, r = exact:to_flat(), rounded:to_flat()
         for i = 1, #e do far = math.max(far, math.abs(e[i] - r[i])) end
         assert.is_true(far > 1e-4, f[1] .. ': the bf16 products are no different from float32 ones: ' .. far)
      end)
   end
end)
