-- CUDA parity of the copying shape ops (cuda/shape.cu: cat, stack, repeat and its backward, pad and its
-- modes, tril,
-- triu), sort and topk (cuda/sort.cu) and the int64 reductions (cuda/int64_reduce.cu: sum, max, min,
-- argmax, argmin of int64 tensors), each against the CPU path on the same inputs, forward and the
-- gradient of every input. The shape family's case table (spec/cases/shape.lua) runs on both sides
-- too, in cuda_parity_spec; the sweeps here add the launch edges, int64 ids and the errors.
--
-- Tolerances: every op here is exact (atol 0, rtol 0), gradients included:
--   cat, stack, pad, repeat, tril/triu and their backward rules move values and never compute one
--     (cat/stack/pad backward are views and pads of the gradient, tril/triu's the same mask);
--   pad_mode's backward (reflect, replicate, circular) gathers, one thread per input element, the g
--     places that read it in g's row-major order, as the CPU, so the bits agree too;
--   repeat's backward sums the tiles of g with one thread per input element in g's row-major order,
--     the order the CPU adds them in, with plain float adds (fast math changes no add), so the bits agree;
--   sort/topk order by the CPU's (value key, position) 64-bit keys, which are distinct, so values and
--     the 1-based indices agree exactly for ties, nan and -0.0 too; the backward stores g at the
--     saved positions (distinct in a line: no atomics);
--   int64 sum wraps like the CPU's unsigned adds, max/min break ties by the lower position: exact in
--     any combine order.
-- Sizes sit on both sides of the launch edges: the cat dim and the sort line length over
-- 1, 127, 128, 129, 1023, 1024, 1025 (a sort block has up to 1024 threads over a power-of-two line
-- in shared memory up to 2048 keys; 2049 and 5000 take the global-scratch path); inputs include
-- transposed and narrowed (non-contiguous) views, and int64 ids through cat/stack/pad/repeat/tril.
--
-- Without a usable GPU every case prints "<case>: skipped: no CUDA device" and checks the reason
-- (cuda_support.lua); spec/gpu/emulate.sh runs it against the kernels emulated on the host.
local fnn = require 'fastnn'
local S = require 'cuda_support'
local gpu, SIZES = S.gpu, S.SIZES
local uniform, case, skip, parity, parity_grad, some_ids = S.uniform, S.case, S.skip, S.parity, S.parity_grad,
   S.some_ids

-- the forward values and the gradients of every input must be bit-equal
local function exact_grad(label, inputs, fn) return parity_grad(label, inputs, fn, 0, 0, 1) end
local function exact(label, inputs, fn) return parity(label, inputs, fn, 0, 0) end

-- values with many ties (whole numbers in [-3, 3], in no order), deterministic
local function tied(shape)
   local n, v = 1, {}
   for _, d in ipairs(shape) do n = n * d end
   for i = 1, n do v[i] = (i * 37 + (i * i) % 11) % 7 - 3 end
   return fnn.tensor(v, shape)
end

-- S.parity for results that hold infinities (assert_close's |g - w| is nan at inf): bit-equal
-- values, nan meeting nan
local function same_values(label, inputs, fn)
   if not gpu then return skip(label, inputs) end
   local want = fn(unpack(inputs)):to_flat()
   local got = fn(unpack(S.to_gpu(inputs)))
   assert.equals(gpu, got:device(), label .. ': result left the GPU')
   got = got:to('cpu'):to_flat()
   assert.equals(#want, #got, label .. ': sizes differ')
   for i = 1, #want do
      local ok = want[i] == got[i] and 1 / want[i] == 1 / got[i] or (want[i] ~= want[i] and got[i] ~= got[i])
      assert.is_true(ok, ('%s: element %d: cpu %s, cuda %s'):format(label, i, tostring(want[i]), tostring(got[i])))
   end
end

describe('cuda parity: cat and stack, forward and backward', function()
   for _, n in ipairs(SIZES) do
      case(('cat of 2 and 3 tensors along dim 1 and 2, non-contiguous inputs, cat dim of %d'):format(n), function()
         local a, b, c = uniform({3, n}, -2, 2), uniform({n, 3}, -2, 2), uniform({3, 2}, -2, 2)
         exact_grad('cat dim 2', {a, b}, function(a, b) return fnn.cat({a, b:t()}, 2) end)
         exact_grad('cat dim 2 of 3', {a, b, c}, function(a, b, c) return fnn.cat({a, b:t(), c}, 2) end)
         exact_grad('cat dim 1 of 3', {a, b, c}, function(a, b, c) return fnn.cat({a:t(), b, c:t()}, 1) end)
      end)
   end
   case('cat along each dim of [2,n,3] permuted and narrowed views, n = 129', function()
      local a, b = uniform({3, 129, 2}, -2, 2), uniform({2, 140, 3}, -2, 2)
      for d = 1, 3 do
         exact_grad(('cat dim %d'):format(d), {a, b}, function(a, b)
            return fnn.cat({a:permute(3, 2, 1), b:narrow(2, 5, 129)}, d)
         end)
      end
   end)
   case('cat and stack of int64 ids along each dim', function()
      local a, b = some_ids({4, 1025}, 50), some_ids({1025, 4}, 7)
      exact('cat int64 dim 1', {a, b}, function(a, b) return fnn.cat({a, b:t()}, 1) end)
      exact('cat int64 dim 2', {a, b}, function(a, b) return fnn.cat({a, b:t(), a}, 2) end)
      exact('stack int64 dim 2', {a, b}, function(a, b) return fnn.stack({a, b:t()}, 2) end)
   end)
   for _, n in ipairs{1, 128, 1025} do
      case(('stack of 2 and 3 tensors [3,%d] at each position, non-contiguous inputs'):format(n), function()
         local a, b = uniform({3, n}, -2, 2), uniform({n, 3}, -2, 2)
         for d = 1, 3 do
            exact_grad(('stack dim %d'):format(d), {a, b}, function(a, b) return fnn.stack({a, b:t()}, d) end)
            exact_grad(('stack of 3, dim %d'):format(d), {a, b}, function(a, b) return fnn.stack({a, b:t(), a}, d) end)
         end
      end)
   end
   case('cat and stack of tensors on different devices is an error naming both', function()
      local a = uniform({2, 3}, -1, 1)
      if not gpu then return skip('mixed devices', {a}) end
      assert.error_matches(function() return fnn.cat({a:to(gpu), a}, 1) end,
                           'cat: tensors on different devices %(%[2,3%] cuda:0 and %[2,3%] cpu%)')
      assert.error_matches(function() return fnn.stack({a, a:to(gpu)}, 1) end,
                           'stack: tensors on different devices %(%[2,3%] cpu and %[2,3%] cuda:0%)')
   end)
end)

describe('cuda parity: repeat (tile), forward and backward', function()
   for _, c in ipairs{{{3, 4}, {2, 3}}, {{3, 4}, {1, 1}}, {{5}, {3, 2, 1}}, {{2, 1, 3}, {2, 129, 1}},
                      {{1, 1025}, {3, 1}}} do
      local shape, reps = c[1], c[2]
      case(('repeat %s by %s, and of the transposed input'):format(fnn.shape_str(fnn.zeros(shape)),
                                                                   table.concat(reps, 'x')), function()
         local x = uniform(shape, -2, 2)
         exact_grad('repeat', {x}, function(x) return x['repeat'](x, reps) end)
         if #shape == 2 then
            exact_grad('repeat of x^T', {x}, function(x) return x:t()['repeat'](x:t(), reps) end)
         end
      end)
   end
   case('repeat and tile of int64 ids', function()
      local ids = some_ids({3, 5}, 9)
      exact('repeat int64', {ids}, function(x) return x['repeat'](x, 2, 1, 3) end)
      exact('tile int64 of x^T', {ids}, function(x) return x:t():tile{2} end)
   end)
end)

describe('cuda parity: pad, forward and backward', function()
   for _, n in ipairs(SIZES) do
      case(('pad [2,%d] asymmetric, with a value, cropping, and of the transposed input'):format(n), function()
         local x = uniform({2, n}, -2, 2)
         exact_grad('pad last dim', {x}, function(x) return x:pad({3, 1}, -1.5) end)
         exact_grad('pad two dims', {x}, function(x) return x:pad({0, 2, 1, 0}) end)
         exact_grad('pad x^T', {x}, function(x) return x:t():pad({1, 2, 2, 1}, 0.25) end)
         if n > 2 then exact_grad('pad crops', {x}, function(x) return x:pad({-1, 2, 1, -1}) end) end
      end)
   end
   case('pad of a 3-d narrowed view over three dims, and of int64 ids', function()
      local x = uniform({3, 5, 130}, -2, 2)
      exact_grad('pad 3 dims', {x}, function(x) return x:narrow(3, 2, 128):pad({1, 0, 0, 3, 2, 1}, 7) end)
      local ids = some_ids({4, 129}, 30)
      exact('pad int64', {ids}, function(x) return x:pad({2, 1, 1, 3}, -4) end)
      exact('pad int64 x^T cropping', {ids}, function(x) return x:t():pad({-1, 1}) end)
   end)
end)

describe('cuda parity: pad modes (reflect, replicate, circular), forward and backward', function()
   for _, mode in ipairs{'reflect', 'replicate', 'circular'} do
      for _, n in ipairs(SIZES) do
         -- reflect takes widths < n, circular <= n
         local w = mode == 'reflect' and math.min(3, n - 1) or mode == 'circular' and math.min(3, n) or 3
         case(('pad %s [2,%d] asymmetric, two dims, and of the transposed input'):format(mode, n), function()
            local x = uniform({2, n}, -2, 2)
            local o = {mode = mode}
            exact_grad('pad_mode last dim', {x}, function(x) return x:pad({w, math.floor(w / 2)}, o) end)
            exact_grad('pad_mode two dims', {x}, function(x) return x:pad({0, w, 1, 0}, o) end)
            exact_grad('pad_mode x^T', {x}, function(x) return x:t():pad({1, 1, w, 0}, o) end)
         end)
      end
      case(('pad %s of a 3-d narrowed view over three dims, of int64 ids, and before a conv'):format(mode), function()
         local x = uniform({3, 5, 130}, -2, 2)
         local o = {mode = mode}
         exact_grad('pad_mode 3 dims', {x}, function(x) return x:narrow(3, 2, 128):pad({1, 0, 0, 3, 2, 1}, o) end)
         exact('pad_mode int64', {some_ids({4, 129}, 30)}, function(x) return x:pad({2, 1, 1, 3}, o) end)
         parity_grad('pad_mode then conv2d', {uniform({2, 3, 9, 8}, -1, 1), uniform({4, 3, 3, 3}, -1, 1)},
                     function(x, w) return fnn.conv2d(x:pad({1, 1, 2, 0}, o), w) end, 1e-4, 1e-4)
      end)
   end
end)

describe('cuda parity: tril and triu, forward and backward', function()
   for _, c in ipairs{{5, 7}, {7, 5}, {1, 1}, {3, 129}} do
      local r, m = c[1], c[2]
      case(('tril and triu of [2,%d,%d] with k = -1, 0, 2, and of the transposed input'):format(r, m), function()
         local x = uniform({2, r, m}, -2, 2)
         for _, k in ipairs{-1, 0, 2} do
            exact_grad('tril ' .. k, {x}, function(x) return x:tril(k) end)
            exact_grad('triu ' .. k, {x}, function(x) return x:triu(k) end)
            exact_grad('tril of x^T ' .. k, {x}, function(x) return x:transpose(2, 3):tril(k) end)
         end
      end)
   end
   case('tril and triu of int64 ids and of a float32 mask', function()
      local ids = some_ids({2, 6, 4}, 11)
      exact('tril int64', {ids}, function(x) return x:tril(1) end)
      exact('triu int64 x^T', {ids}, function(x) return x:transpose(2, 3):triu(-1) end)
      exact('triu mask', {fnn.ones(9, 9)}, function(x) return x:triu(1) end)
   end)
end)

describe('cuda parity: sort and topk, values, indices and backward', function()
   -- values and indices (as float32: exact below 2^24) in one result, so one run checks both and the
   -- gradient of the values
   local function both(v, i) return fnn.cat({v, i:float()}, 1) end
   local function check(x, layout, short)
      local n = x:shape()[2]
      for _, desc in ipairs{false, true} do
         exact_grad(('sort %s desc=%s'):format(layout, tostring(desc)), {x},
                    function(x) return both(x:sort(2, {descending = desc})) end)
      end
      -- short lines: several k both ways; long ones (slow under emulation) a few
      local ks = short and {{1, true}, {1, false}, {math.min(5, n), true}, {n, false}} or {{5, true}, {n, false}}
      for _, c in ipairs(ks) do
         local k, largest = c[1], c[2]
         exact_grad(('topk %d %s largest=%s'):format(k, layout, tostring(largest)), {x},
                    function(x) return both(x:topk(k, 2, {largest = largest})) end)
      end
   end
   for _, n in ipairs(SIZES) do
      case(('sort and topk along the last dim of [2,%d] with ties, both directions'):format(n), function()
         check(tied({2, n}), 'last', n < 1000)
      end)
      case(('sort and topk along the middle dim of [2,%d,2] (transposed view) with ties'):format(n), function()
         check(tied({2, 2, n}):transpose(2, 3), 'middle', n < 1000)
      end)
   end
   for _, n in ipairs{2049, 5000} do
      case(('sort and topk of a line of %d (global scratch), with ties'):format(n), function()
         local x = tied({1, n})
         exact_grad('sort long desc', {x}, function(x) return both(x:sort(2, {descending = true})) end)
         exact_grad('topk long', {x}, function(x) return both(x:topk(7, 2, {largest = false})) end)
      end)
   end
   case('sort of nan, inf, -0.0 and 0.0, a 0-dim tensor, and of many short lines', function()
      local x = fnn.tensor{{0, -0.0, 0 / 0, 1, -1 / 0, 1 / 0, 0 / 0, -0.0, 2, -1}}
      for _, desc in ipairs{false, true} do
         same_values('sort specials', {x}, function(x) return (x:sort(2, {descending = desc})) end)
         same_values('sort specials indices', {x}, function(x) local _, i = x:sort(2, {descending = desc}); return i end)
      end
      exact_grad('sort 0-dim', {fnn.tensor(3.5)}, function(x) return (x:sort()) end)
      exact_grad('sort many lines', {tied({300, 6})}, function(x) return both(x:sort(2)) end)
      exact_grad('topk along dim 1', {tied({40, 3})}, function(x) return both(x:topk(3, 1)) end)
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
