-- CUDA parity of the int64 reductions (cuda/int64_reduce.cu: sum, max, min, argmax, argmin of int64
-- tensors) against the CPU path on the same inputs, and cat/stack's refusal of tensors on two
-- devices. The values of the shape family (cat, stack, repeat, pad and its modes, tril, triu: the
-- launch-edge sweeps, non-contiguous views, int64 ids) and of sort/topk (ties, nan/inf, long lines)
-- are cases of spec/cases/shape.lua and spec/cases/sort.lua, run on both sides by cuda_parity_spec.
--
-- Tolerances: exact: int64 sum wraps like the CPU's unsigned adds, max/min break ties by the lower
-- position, in any combine order. Sizes sit on both sides of the launch edges (1, 127, 128, 129,
-- 1023, 1024, 1025).
--
-- Without a usable GPU every case prints "<case>: skipped: no CUDA device" and checks the reason
-- (cuda_support.lua); spec/gpu/emulate.sh runs it against the kernels emulated on the host.
local fnn = require 'fastnn'
local S = require 'cuda_support'
local gpu, SIZES = S.gpu, S.SIZES
local uniform, case, skip, parity, some_ids = S.uniform, S.case, S.skip, S.parity, S.some_ids

local function exact(label, inputs, fn) return parity(label, inputs, fn, 0, 0) end

describe('cuda: cat and stack on two devices', function()
   case('cat and stack of tensors on different devices is an error naming both', function()
      local a = uniform({2, 3}, -1, 1)
      if not gpu then return skip('mixed devices', {a}) end
      assert.error_matches(function() return fnn.cat({a:to(gpu), a}, 1) end,
                           'cat: tensors on different devices %(%[2,3%] cuda:0 and %[2,3%] cpu%)')
      assert.error_matches(function() return fnn.stack({a, a:to(gpu)}, 1) end,
                           'stack: tensors on different devices %(%[2,3%] cpu and %[2,3%] cuda:0%)')
   end)
end)

describe('cuda parity: int64 reductions (sum, max, min, argmax, argmin)', function()
   for _, n in ipairs(SIZES) do
      case(('int64 sum, max, min, argmax, argmin of [3,%d] over each dim and everything'):format(n), function()
         local x = some_ids({3, n}, 7) - 4                      -- ties everywhere, negatives too
         exact('sum all', {x}, function(x) return x:sum() end)
         for d = 1, 2 do
            exact('sum dim ' .. d, {x}, function(x) return x:sum(d) end)
            exact('max and its indices, dim ' .. d, {x}, function(x) return fnn.stack({x:max(d)}, 1) end)
            exact('min and its indices, dim ' .. d, {x}, function(x) return fnn.stack({x:min(d)}, 1) end)
            exact('argmax dim ' .. d, {x}, function(x) return x:argmax(d) end)
            exact('argmin dim ' .. d, {x}, function(x) return x:argmin(d) end)
         end
         exact('max all', {x}, function(x) return x:max() end)
         exact('argmin all', {x}, function(x) return x:argmin() end)
      end)
   end
   case('int64 sums that wrap, over a transposed view, and a middle dim, both launch modes', function()
      local big = fnn.tensor({2 ^ 62, 2 ^ 62, 2 ^ 62, 5}, {2, 2}):long()
      exact('sum wraps', {big}, function(x) return x:sum() end)
      exact('sum wraps dim', {big}, function(x) return x:t():sum(2) end)
      -- 2400 lines of 70: a thread per line; 10 lines of 100 strided by 5: a block per line
      local x = some_ids({4, 70, 600}, 1000)
      exact('sum middle dim', {x}, function(x) return x:sum(2) end)
      exact('argmax middle dim', {x}, function(x) return x:argmax(2) end)
      local y = some_ids({2, 100, 5}, 9)
      exact('sum middle dim, block per line', {y}, function(y) return y:sum(2) end)
      exact('max middle dim, block per line', {y}, function(y) return fnn.stack({y:max(2)}, 1) end)
      exact('min last dim of y^T', {y}, function(y) return fnn.stack({y:transpose(2, 3):min(3)}, 1) end)
   end)
end)
