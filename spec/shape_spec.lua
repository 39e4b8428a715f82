-- Shape ops (core/ops/shape.c, lua/fastnn/ops/shape.lua) against naive Lua
-- loops over row-major index tuples: views share storage and copies do not,
-- non-contiguous inputs, 0-size dims, gradients through views, and the bad
-- inputs with the op, the shapes and the spec's own line in the message.
local fnn = require 'fastnn'

-- ---------------------------------------------------------------------------
-- naive helpers: a tensor is its flat row-major values and its shape

local support = require 'support'
local each_index, pos, build = support.each_index, support.pos, support.build
local approx, seq, err_of = support.approx_abs, support.seq, support.err_of

-- ---------------------------------------------------------------------------

describe('reshape and view', function()
   local x = seq{2, 3, 4}
   it('keep row-major order and infer one -1', function()
      local r = x:reshape(4, -1)
      assert.same({4, 6}, r:shape())
      approx(x:to_flat(), r)
      assert.same({3, 8}, x:reshape{-1, 8}:shape())
      assert.same({24}, x:view(-1):shape())
      assert.same({2, 12}, x:view{2, 12}:shape())
   end)
   it('share storage when the layout allows', function()
      assert.equals(x:storage_id(), x:reshape(6, 4):storage_id())
      assert.equals(x:storage_id(), x:view(2, 2, 6):storage_id())
      -- a narrow along the first dim stays viewable: its rows are still one block
      local n = x:narrow(1, 2, 1)
      assert.equals(x:storage_id(), n:view(12):storage_id())
      approx(build({12}, function(i) return 12 + i[1] end), n:view(12))
      -- merging dims that are contiguous among themselves in a transposed tensor is a view too
      local p = x:permute(3, 1, 2)                      -- [4, 2, 3]: dims 2, 3 are contiguous together
      local v = p:view(4, 6)
      assert.equals(x:storage_id(), v:storage_id())
      approx(build({4, 6}, function(i)
         local a, b = math.floor((i[2] - 1) / 3) + 1, (i[2] - 1) % 3 + 1
         return pos({2, 3, 4}, {a, b, i[1]})
      end), v)
   end)
   it('reshape copies a layout that cannot be viewed', function()
      local t = x:transpose(1, 3)                       -- [4, 3, 2]
      local r = t:reshape(4, 6)
      assert.are_not.equal(x:storage_id(), r:storage_id())
      assert.is_true(r:is_contiguous())
      approx(build({4, 6}, function(i)
         local b, a = math.floor((i[2] - 1) / 2) + 1, (i[2] - 1) % 2 + 1
         return pos({2, 3, 4}, {a, b, i[1]})
      end), r)
   end)
   it('view refuses a layout that needs a copy, naming the shapes', function()
      local err = err_of(function() local _ = x:transpose(1, 2):view(24) end)
      assert.matches('view: cannot view %[3,2,4%] %(strides %[4,12,1%]%) as %[24%] without a copy; use reshape', err)
   end)
   it('handles 0-size dims and scalars', function()
      local e = fnn.zeros(0, 3)
      assert.same({3, 0}, e:reshape(3, 0):shape())
      assert.same({0, 5}, fnn.zeros(5, 0):t():reshape(0, 5):shape())
      assert.same({1, 1}, fnn.tensor(7):reshape(1, 1):shape())
      assert.same({}, fnn.tensor{7}:reshape{}:shape())
      assert.equals(7, fnn.tensor{7}:reshape{}:item())
   end)
   it('refuses a wrong element count, naming both shapes and counts at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.zeros(2, 3):reshape(4, 2) end)
      assert.equals(('spec/shape_spec.lua:%d: reshape: cannot reshape [2,3] (6 elements) into [4,2] (8 elements)')
                    :format(line), err)
      assert.matches('reshape: cannot reshape %[2,3%] %(6 elements%) into %[4,%-1%] %(6 is not a multiple of 4%)',
                     err_of(function() local _ = fnn.zeros(2, 3):reshape(4, -1) end))
      assert.matches('reshape: only one size may be %-1',
                     err_of(function() local _ = fnn.zeros(2, 3):reshape(-1, -1) end))
      assert.matches('view: cannot reshape %[0,3%] %(0 elements%) into %[0,%-1%]',
                     err_of(function() local _ = fnn.zeros(0, 3):view(0, -1) end))
   end)
   it('gradients flow back through reshape into the input shape', function()
      local p = fnn.Param(seq{2, 3})
      local y = p:tensor():t():reshape(6)
      y:backward(fnn.arange(6):float())
      assert.same({2, 3}, p:grad():shape())
      -- y[k] = x^T flat, so dx[i][j] = weight at the position of (j, i) in x^T
      approx(build({2, 3}, function(i) return (i[2] - 1) * 2 + (i[1] - 1) end), p:grad())
   end)
end)

describe('transpose, t and permute', function()
   local x = seq{2, 3, 4}
   it('transpose swaps two dims as a view', function()
      local t = x:transpose(1, 3)
      assert.same({4, 3, 2}, t:shape())
      assert.equals(x:storage_id(), t:storage_id())
      assert.is_false(t:is_contiguous())
      approx(build({4, 3, 2}, function(i) return pos({2, 3, 4}, {i[3], i[2], i[1]}) end), t)
      approx(x:to_flat(), x:transpose(-1, 3))
   end)
   it('t is the 2-D transpose and leaves 1-D alone', function()
      local m = seq{3, 7}
      approx(build({7, 3}, function(i) return pos({3, 7}, {i[2], i[1]}) end), m:t())
      local v = fnn.tensor{1, 2, 3}
      assert.same({3}, v:t():shape())
      assert.matches('t: expects a 1%-D or 2%-D tensor, got %[2,3,4%]', err_of(function() local _ = x:t() end))
   end)
   it('permute reorders every dim as a view', function()
      local p = x:permute{3, 1, 2}
      assert.same({4, 2, 3}, p:shape())
      assert.equals(x:storage_id(), p:storage_id())
      approx(build({4, 2, 3}, function(i) return pos({2, 3, 4}, {i[2], i[3], i[1]}) end), p)
      approx(build({3, 2, 4}, function(i) return pos({2, 3, 4}, {i[2], i[1], i[3]}) end), x:permute(2, -3, 3))
   end)
   it('permute checks it is given a permutation', function()
      assert.matches('permute: dim 1 appears twice; dims must be a permutation of 1..3 for %[2,3,4%]',
                     err_of(function() local _ = x:permute(1, 1, 2) end))
      assert.matches('permute: 2 dims given for %[2,3,4%], which has 3',
                     err_of(function() local _ = x:permute(1, 2) end))
      assert.matches('permute: dim 4 out of range for %[2,3,4%] %(dims are 1..3 or %-3..%-1%)',
                     err_of(function() local _ = x:permute(1, 2, 4) end))
   end)
   it('transpose refuses dims out of range', function()
      assert.matches('transpose: dim 0 out of range for %[2,3,4%]', err_of(function() local _ = x:transpose(0, 1) end))
      assert.matches('transpose: dim %-4 out of range', err_of(function() local _ = x:transpose(1, -4) end))
   end)
end)

describe('expand', function()
   it('repeats size-1 dims with stride 0, keeps -1, adds leading dims', function()
      local c = fnn.tensor{{1}, {2}, {3}}             -- [3, 1]
      local e = c:expand(2, 3, 4)
      assert.same({2, 3, 4}, e:shape())
      assert.same({0, 1, 0}, e:stride())
      approx(build({2, 3, 4}, function(i) return i[2] end), e)
      local k = c:expand{-1, 5}
      assert.same({3, 5}, k:shape())
      approx(build({3, 5}, function(i) return i[1] end), k)
   end)
   it('shares storage', function()
      local big = seq{17, 1}
      assert.equals(big:storage_id(), big:expand(17, 3):storage_id())
   end)
   it('expands a size-1 dim to 0', function()
      assert.same({0, 3}, fnn.ones(1, 3):expand(0, 3):shape())
   end)
   it('refuses to expand a dim that is not size 1', function()
      assert.matches('expand: cannot expand %[2,3%] to %[4,3%] %(dim 1 has size 2; only size%-1 dims expand%)',
                     err_of(function() local _ = fnn.zeros(2, 3):expand(4, 3) end))
      assert.matches('expand: cannot expand %[2,3%] to %[3%] %(fewer dims%)',
                     err_of(function() local _ = fnn.zeros(2, 3):expand(3) end))
   end)
   it('sums the gradient over the expanded dims', function()
      local p = fnn.Param(fnn.tensor{{1}, {2}})        -- [2, 1]
      p:tensor():expand(3, 2, 4):backward(seq{3, 2, 4})
      -- dx[i] = sum over the new dim 1 and the expanded dim 3 of the weights
      approx(build({2, 1}, function(i)
         local s = 0
         for a = 1, 3 do for c = 1, 4 do s = s + pos({3, 2, 4}, {a, i[1], c}) end end
         return s
      end), p:grad())
   end)
end)

describe('narrow and select', function()
   local x = seq{4, 5}
   it('narrow keeps positions start .. start+length-1 as a view', function()
      local n = x:narrow(2, 2, 3)
      assert.same({4, 3}, n:shape())
      assert.equals(x:storage_id(), n:storage_id())
      approx(build({4, 3}, function(i) return pos({4, 5}, {i[1], i[2] + 1}) end), n)
      approx(build({2, 5}, function(i) return pos({4, 5}, {i[1] + 2, i[2]}) end), x:narrow(1, -2, 2))
      assert.same({4, 0}, x:narrow(2, 6, 0):shape())
   end)
   it('narrow of a narrow reads through both offsets', function()
      local n = x:t():narrow(1, 2, 3):narrow(2, 3, 2)   -- x^T rows 2..4, cols 3..4
      approx(build({3, 2}, function(i) return pos({4, 5}, {i[2] + 2, i[1] + 1}) end), n)
   end)
   it('narrow refuses a range past the end, naming dim, start, length and shape', function()
      assert.matches('narrow: start 4 and length 3 out of range for dim 2 of %[4,5%] %(positions 1..5%)',
                     err_of(function() local _ = x:narrow(2, 4, 3) end))
      assert.matches('narrow: start 0 and length 1 out of range for dim 1 of %[4,5%]',
                     err_of(function() local _ = x:narrow(1, 0, 1) end))
      assert.matches('narrow: dim 3 out of range for %[4,5%] %(dims are 1..2 or %-2..%-1%)',
                     err_of(function() local _ = x:narrow(3, 1, 1) end))
   end)
   it('select drops the dim; t[i] is select(1, i)', function()
      local s = x:select(2, 3)
      assert.same({4}, s:shape())
      assert.equals(x:storage_id(), s:storage_id())
      approx(build({4}, function(i) return pos({4, 5}, {i[1], 3}) end), s)
      approx(build({5}, function(i) return pos({4, 5}, {4, i[1]}) end), x:select(1, -1))
      approx(x:select(1, 2):to_flat(), x[2])
      assert.same({}, fnn.tensor{5}:select(1, 1):shape())
   end)
   it('select refuses positions out of range, printed 1-based', function()
      assert.matches('select: index 6 out of range for dim 2 of %[4,5%] %(positions 1..5%)',
                     err_of(function() local _ = x:select(2, 6) end))
      assert.matches('select: index 0 out of range for dim 1 of %[4,5%]',
                     err_of(function() local _ = x:select(1, 0) end))
      assert.matches('select: index %-5 out of range for dim 1 of %[4,5%]',
                     err_of(function() local _ = x:select(1, -5) end))
   end)
   it('gradients land in zeros of the input shape', function()
      local p = fnn.Param(fnn.zeros(3, 4))
      p:tensor():narrow(2, 2, 2):backward(fnn.tensor{{1, 2}, {3, 4}, {5, 6}})
      approx({0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0}, p:grad())
      local q = fnn.Param(fnn.zeros(3, 2))
      q:tensor():select(1, 2):backward(fnn.tensor{7, 8})
      approx({0, 0, 7, 8, 0, 0}, q:grad())
   end)
end)

describe('squeeze, unsqueeze, flatten, contiguous', function()
   it('squeeze drops size-1 dims (all, or the one given)', function()
      local x = fnn.zeros(1, 3, 1, 2)
      assert.same({3, 2}, x:squeeze():shape())
      assert.same({1, 3, 2}, x:squeeze(3):shape())
      assert.same({3, 1, 2}, x:squeeze(-4):shape())
      assert.same({1, 3, 1, 2}, x:squeeze(2):shape())     -- size 3: left as it is (PyTorch)
      assert.same({}, fnn.zeros(1, 1):squeeze():shape())
      assert.matches('squeeze: dim 5 out of range for %[1,3,1,2%]', err_of(function() local _ = x:squeeze(5) end))
   end)
   it('unsqueeze inserts a size-1 dim anywhere in 1..ndim+1', function()
      local x = seq{3, 6}
      assert.same({1, 3, 6}, x:unsqueeze(1):shape())
      assert.same({3, 1, 6}, x:unsqueeze(2):shape())
      assert.same({3, 6, 1}, x:unsqueeze(3):shape())
      assert.same({3, 6, 1}, x:unsqueeze(-1):shape())
      assert.equals(x:storage_id(), x:unsqueeze(2):storage_id())
      assert.is_true(x:unsqueeze(3):is_contiguous())
      approx(x:to_flat(), x:t():unsqueeze(1):squeeze(1):t())
      assert.matches('unsqueeze: dim 4 out of range for %[3,6%] %(dims are 1..3',
                     err_of(function() local _ = x:unsqueeze(4) end))
   end)
   it('flatten merges a range of dims', function()
      local x = seq{2, 3, 4}
      assert.same({24}, x:flatten():shape())
      assert.same({2, 12}, x:flatten(2):shape())
      assert.same({6, 4}, x:flatten(1, 2):shape())
      assert.same({1}, fnn.tensor(3):flatten():shape())
      assert.equals(x:storage_id(), x:flatten():storage_id())
      local t = x:transpose(1, 2):flatten(2)                -- [3, 8], a copy
      approx(build({3, 8}, function(i)
         local a, c = math.floor((i[2] - 1) / 4) + 1, (i[2] - 1) % 4 + 1
         return pos({2, 3, 4}, {a, i[1], c})
      end), t)
      assert.matches('flatten: start dim 3 comes after end dim 2', err_of(function() local _ = x:flatten(3, 2) end))
   end)
   it('contiguous returns the same storage when already contiguous, else a row-major copy', function()
      local x = seq{4, 5}
      assert.equals(x:storage_id(), x:contiguous():storage_id())
      local c = x:t():contiguous()
      assert.are_not.equal(x:storage_id(), c:storage_id())
      assert.is_true(c:is_contiguous())
      approx(build({5, 4}, function(i) return pos({4, 5}, {i[2], i[1]}) end), c)
   end)
end)

describe('cat and stack', function()
   local a, b = seq{2, 3}, seq{2, 2} * 10
   it('cat joins along a dim', function()
      local r = fnn.cat({a, b}, 2)
      assert.same({2, 5}, r:shape())
      approx(build({2, 5}, function(i)
         if i[2] <= 3 then return pos({2, 3}, i) end
         return 10 * pos({2, 2}, {i[1], i[2] - 3})
      end), r)
      local r1 = fnn.cat{a, a:narrow(1, 2, 1)}            -- dim defaults to 1
      assert.same({3, 3}, r1:shape())
      approx({1, 2, 3, 4, 5, 6, 4, 5, 6}, r1)
   end)
   it('cat reads non-contiguous pieces and skips 0-size ones', function()
      local r = fnn.cat({a:t(), fnn.zeros(0, 2), b}, 1)
      assert.same({5, 2}, r:shape())
      approx({1, 4, 2, 5, 3, 6, 10, 20, 30, 40}, r)
   end)
   it('cat refuses pieces that differ outside the dim', function()
      assert.matches('cat: shapes %[2,3%] %(tensor 1%) and %[2,2%] %(tensor 2%) differ outside dim 1',
                     err_of(function() local _ = fnn.cat({a, b}, 1) end))
      assert.matches('cat: expected a non%-empty list of tensors', err_of(function() local _ = fnn.cat({}, 1) end))
      assert.matches('cat: element 2 of the list is a number', err_of(function() local _ = fnn.cat({a, 3}) end))
      assert.matches('cat: dim 3 out of range for %[2,3%]', err_of(function() local _ = fnn.cat({a, a}, 3) end))
   end)
   it('stack adds a new dim', function()
      local r = fnn.stack({a, a * 2}, 1)
      assert.same({2, 2, 3}, r:shape())
      approx({1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12}, r)
      local s = fnn.stack({a, a * 2}, 3)
      assert.same({2, 3, 2}, s:shape())
      approx(build({2, 3, 2}, function(i) return pos({2, 3}, {i[1], i[2]}) * i[3] end), s)
      assert.matches('stack: shapes %[2,3%] %(tensor 1%) and %[2,2%] %(tensor 2%) differ',
                     err_of(function() local _ = fnn.stack({a, b}) end))
   end)
   it('gradients of cat and stack go back to each piece', function()
      local p, q = fnn.Param(fnn.zeros(2, 1)), fnn.Param(fnn.zeros(2, 2))
      fnn.cat({p:tensor(), q:tensor()}, 2):backward(seq{2, 3})
      approx({1, 4}, p:grad())
      approx({2, 3, 5, 6}, q:grad())
      local r = fnn.Param(fnn.zeros(3))
      fnn.stack({r:tensor(), r:tensor()}, 2):backward(seq{3, 2})
      approx({3, 7, 11}, r:grad())
   end)
end)

describe('split and chunk', function()
   local x = seq{5, 4}
   it('split returns a Lua array of views of the given size', function()
      local parts = x:split(2)
      assert.equals(3, #parts)
      assert.same({2, 4}, parts[1]:shape())
      assert.same({1, 4}, parts[3]:shape())
      approx({17, 18, 19, 20}, parts[3])
      for _, p in ipairs(parts) do assert.equals(x:storage_id(), p:storage_id()) end
      local cols = x:split({1, 3}, 2)
      assert.same({5, 1}, cols[1]:shape())
      approx(build({5, 3}, function(i) return pos({5, 4}, {i[1], i[2] + 1}) end), cols[2])
      assert.matches('split: sizes %[1,2%] add up to 3, but dim 2 of %[5,4%] has 4',
                     err_of(function() local _ = x:split({1, 2}, 2) end))
   end)
   it('chunk splits into at most n pieces of ceil(size / n)', function()
      local parts = x:chunk(2)
      assert.equals(2, #parts)
      assert.same({3, 4}, parts[1]:shape())
      assert.same({2, 4}, parts[2]:shape())
      assert.equals(4, #x:chunk(4, 2))
      assert.equals(3, #fnn.zeros(6):chunk(4))            -- sizes 2, 2, 2 (PyTorch)
   end)
end)

describe('repeat and tile', function()
   local x = fnn.tensor{{1, 2}, {3, 4}}
   it('tiles each dim, extra counts adding leading dims (Torch semantics)', function()
      local r = x['repeat'](x, 2, 1, 3)
      assert.same({2, 2, 6}, r:shape())
      approx(build({2, 2, 6}, function(i) return pos({2, 2}, {i[2], (i[3] - 1) % 2 + 1}) end), r)
      local r2 = x['repeat'](x, {3, 2})
      approx(build({6, 4}, function(i) return pos({2, 2}, {(i[1] - 1) % 2 + 1, (i[2] - 1) % 2 + 1}) end), r2)
      assert.same({0, 2}, x['repeat'](x, 0, 1):shape())
   end)
   it('reads a non-contiguous input', function()
      local r = x:t()['repeat'](x:t(), 1, 2)
      approx({1, 3, 1, 3, 2, 4, 2, 4}, r)
   end)
   it('tile is the alias and accepts fewer counts than dims', function()
      approx(x['repeat'](x, {2, 2}):to_flat(), x:tile{2, 2})
      approx(x['repeat'](x, {1, 3}):to_flat(), x:tile{3})
   end)
   it('refuses fewer counts than dims', function()
      assert.matches('repeat: 1 repeat counts for %[2,2%]; need at least 2', err_of(function() local _ = x['repeat'](x, 2) end))
   end)
   it('sums the gradient over the repeats', function()
      local p = fnn.Param(fnn.zeros(2))
      p:tensor()['repeat'](p:tensor(), 2, 3):backward(seq{2, 6})
      -- dx[j] = sum of weights at columns j, j+2, j+4 in both rows
      approx({1 + 3 + 5 + 7 + 9 + 11, 2 + 4 + 6 + 8 + 10 + 12}, p:grad())
   end)
end)

describe('pad', function()
   local x = seq{2, 3}
   it('pads the last dims in F.pad order with a value', function()
      local r = x:pad({1, 2}, -1)
      assert.same({2, 6}, r:shape())
      approx({-1, 1, 2, 3, -1, -1, -1, 4, 5, 6, -1, -1}, r)
      local r2 = x:pad{0, 1, 1, 0}                      -- last dim (0, 1), then dim 1 (1, 0); value 0
      assert.same({3, 4}, r2:shape())
      approx({0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0}, r2)
   end)
   it('crops with negative widths, also on a non-contiguous input', function()
      approx({2, 5}, x:pad{-1, -1})
      local t = x:t():pad({-1, 1, 0, -1}, 9)             -- [3,2] -> [2,2]
      approx({4, 9, 5, 9}, t)
   end)
   it('pads 0-size dims', function()
      local r = fnn.zeros(0, 2):pad({0, 0, 1, 1}, 3)
      assert.same({2, 2}, r:shape())
      approx({3, 3, 3, 3}, r)
   end)
   it('refuses widths that leave a negative size or too many pairs', function()
      assert.matches('pad: padding %(%-2, %-2%) leaves dim 2 of %[2,3%] with size %-1',
                     err_of(function() local _ = x:pad{-2, -2} end))
      assert.matches('pad: 3 %(before, after%) pairs for %[2,3%], which has 2 dims',
                     err_of(function() local _ = x:pad{1, 1, 1, 1, 1, 1} end))
      assert.matches('pad: expected a table of %(before, after%) pairs, got 3 widths',
                     err_of(function() local _ = x:pad{1, 1, 1} end))
   end)
end)

describe('tril and triu', function()
   local x = seq{2, 3, 4}
   local function check(name, k, keep)
      approx(build({2, 3, 4}, function(i)
         return keep(i[2], i[3], k) and pos({2, 3, 4}, i) or 0
      end), x[name](x, k))
   end
   for _, k in ipairs{0, 1, -1, 3, -3} do
      it('tril and triu with diagonal ' .. k .. ' on a batch', function()
         check('tril', k, function(r, c, kk) return c - r <= kk end)
         check('triu', k, function(r, c, kk) return c - r >= kk end)
      end)
   end
   it('default to the main diagonal and read non-contiguous input', function()
      approx({1, 0, 2, 5}, fnn.tensor{{1, 2}, {4, 5}}:t():tril())
      approx({1, 4, 0, 5}, fnn.tensor{{1, 2}, {4, 5}}:t():triu())
   end)
   it('refuse fewer than 2 dims', function()
      assert.matches('tril: needs at least 2 dims, got %[3%]', err_of(function() local _ = fnn.zeros(3):tril() end))
   end)
end)
