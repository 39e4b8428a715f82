-- Tensor creation, inspection, printing and the bad-input errors of the core.
local fnn = require 'fastnn'

local function flat(t) return t:to_flat() end
local function close(a, b, tol) return math.abs(a - b) <= (tol or 1e-6) end

describe('creation', function()
   it('builds from nested tables, flat tables with a shape, and numbers', function()
      local t = fnn.tensor{{1, 2, 3}, {4, 5, 6}}
      assert.same({2, 3}, t:shape())
      assert.same({{1, 2, 3}, {4, 5, 6}}, t:to_table())
      local f = fnn.tensor({1, 2, 3, 4, 5, 6}, {3, 2})
      assert.same({{1, 2}, {3, 4}, {5, 6}}, f:to_table())
      local s = fnn.tensor(2.5)
      assert.equals(0, s:dim())
      assert.equals(2.5, s:item())
      local e = fnn.tensor{}
      assert.same({0}, e:shape())
      assert.equals(0, e:numel())
   end)

   it('makes zeros, ones, full, eye, arange, linspace with sizes as varargs or a table', function()
      assert.same({{0, 0, 0}, {0, 0, 0}}, fnn.zeros(2, 3):to_table())
      assert.same({{1, 1}, {1, 1}}, fnn.ones{2, 2}:to_table())
      assert.same({7, 7}, fnn.full({2}, 7):to_table())
      assert.same({{1, 0, 0}, {0, 1, 0}}, fnn.eye(2, 3):to_table())
      assert.same({0, 1, 2, 3, 4}, fnn.arange(5):to_table())
      assert.same({2, 4, 6}, fnn.arange(2, 8, 2):to_table())    -- excludes the end
      local l = fnn.linspace(0, 1, 5):to_table()
      for i, v in ipairs{0, 0.25, 0.5, 0.75, 1} do assert.is_true(close(v, l[i])) end
      assert.same({2, 3}, fnn.zeros_like(fnn.ones(2, 3)):shape())
      assert.same({{5, 5}}, fnn.full_like(fnn.ones(1, 2), 5):to_table())
   end)

   it('makes zeros, ones, full and empty on the device its options name, the *_like ones on the model\'s', function()
      local cpu = fnn.Device.cpu()
      for _, d in ipairs{'cpu', cpu} do
         local z = fnn.zeros(2, 3, {device = d})
         assert.equals(cpu, z:device())
         assert.same({{0, 0, 0}, {0, 0, 0}}, z:to_table())
         assert.same({7, 7}, fnn.full({2}, 7, {device = d, dtype = 'int64'}):to_table())
         assert.equals('int64', fnn.ones({3}, {dtype = 'int64', device = d}):dtype())
         assert.same({4}, fnn.empty(4, {device = d}):shape())
      end
      -- *_like keep the dtype and device of their model; options override one and keep the other
      local ids = fnn.arange(3)
      assert.equals('int64', fnn.zeros_like(ids):dtype())
      assert.same({9, 9, 9}, fnn.full_like(ids, 9):to_table())
      local f = fnn.full_like(ids, 1.5, {dtype = 'float32'})
      assert.equals('float32', f:dtype())
      assert.same({1.5, 1.5, 1.5}, f:to_table())
      assert.equals(cpu, fnn.ones_like(ids, {device = 'cpu'}):device())
      assert.same({2, 5}, fnn.randn_like(fnn.zeros(2, 5)):shape())
      local u = fnn.rand_like(fnn.zeros(1000)):to_flat()
      for i = 1, #u do assert.is_true(u[i] >= 0 and u[i] < 1) end
      -- a device this build or machine lacks, or a name that is no device: an error at the caller's
      -- line (assert.error_matches strips the position, so pcall here)
      local function err_of(f) local ok, e = pcall(f); assert.is_false(ok); return e end
      local want = fnn.Device.cuda(0) and 'no GPU 255' or 'cuda:0 is not available'
      local bad = fnn.Device.cuda(0) and 'cuda:255' or 'cuda'
      assert.matches('tensor_spec%.lua:%d+: zeros: .*' .. want, err_of(function() local t = fnn.zeros(2, {device = bad}); return t end))
      assert.matches("tensor_spec%.lua:%d+: full: device is 'gpu', expected a Device, 'cpu', 'cuda' or 'cuda:<n>'",
                     err_of(function() local t = fnn.full({2}, 1, {device = 'gpu'}); return t end))
      assert.matches('tensor_spec%.lua:%d+: zeros_like: device is number',
                     err_of(function() local t = fnn.zeros_like(ids, {device = 7}); return t end))
      assert.matches('tensor_spec%.lua:%d+: zeros_like: expected a tensor, got number',
                     err_of(function() local t = fnn.zeros_like(3); return t end))
      assert.matches('tensor_spec%.lua:%d+: full_like: options are a number, expected a table',
                     err_of(function() local t = fnn.full_like(ids, 1, 2); return t end))
      assert.matches('tensor_spec%.lua:%d+: full_like: value is a nil, expected a number',
                     err_of(function() local t = fnn.full_like(ids); return t end))
   end)

   it('draws reproducible random numbers per seed with the right distributions', function()
      fnn.manual_seed(42)
      local a = flat(fnn.randn(1000))
      fnn.manual_seed(42)
      local b = flat(fnn.randn(1000))
      assert.same(a, b)
      local mean, sq = 0, 0
      for _, v in ipairs(a) do mean = mean + v; sq = sq + v * v end
      mean = mean / #a
      assert.is_true(math.abs(mean) < 0.15)
      assert.is_true(math.abs(sq / #a - 1) < 0.15)
      local u = flat(fnn.rand(1000))
      local lo, hi, sum = 1, 0, 0
      for _, v in ipairs(u) do lo = math.min(lo, v); hi = math.max(hi, v); sum = sum + v end
      assert.is_true(lo >= 0 and hi < 1 and math.abs(sum / 1000 - 0.5) < 0.05)
      local p = flat(fnn.randperm(10))
      table.sort(p)
      assert.same({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p)
   end)
end)

describe('inspection', function()
   local t = fnn.tensor{{1, 2, 3}, {4, 5, 6}}
   it('reports shape, size, dim, numel, length and elements 1-based', function()
      assert.equals(2, t:dim())
      assert.equals(6, t:numel())
      assert.equals(3, t:size(2))
      assert.equals(3, t:size(-1))
      assert.equals(2, #t)
      assert.equals(6, t[2][3])
      assert.equals(4, t[-1][1])
      assert.equals('cpu', t:device_name())
   end)

   it('prints values, shape and device', function()
      local s = tostring(t)
      assert.matches('tensor%(%[%[1%., 2%., 3%.%],', s)
      assert.matches('%[fnn.Tensor of shape %[2,3%] on cpu%]', s)
      assert.matches('0%.5000', tostring(fnn.tensor{0.5, 1}))
      assert.matches('%.%.%.', tostring(fnn.zeros(2000)))   -- summarized
      assert.matches('^3%.\n', tostring(fnn.tensor(3)))
   end)

   it('zero-size dims work through creation and elementwise ops', function()
      local z = fnn.zeros(0, 3)
      assert.same({0, 3}, z:shape())
      assert.same({0, 3}, (z + 1):shape())
      assert.same({0, 3}, (z * fnn.ones(3)):shape())
      assert.same({}, z:to_table())
   end)
end)

describe('bad input', function()
   it('names the element that is not a number', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local ok, err = pcall(function() local t = fnn.tensor{{1, 2}, {3, 'x'}}; return t end)
      assert.is_false(ok)
      assert.equals(('spec/tensor_spec.lua:%d: tensor: element [2][2] is a string, expected a number'):format(line), err)
      ok, err = fnn.try_tensor{{1}, 2}
      assert.is_nil(ok)
      assert.matches('tensor: ragged nested table', err)
   end)

   it('refuses ragged nested tables', function()
      local ok, err = pcall(fnn.tensor, {{1, 2}, {3}})
      assert.is_false(ok)
      assert.matches('ragged nested table: row %[2%] has 1 elements, expected 2', err)
   end)

   it('refuses a flat table whose length does not match the shape', function()
      local ok, err = pcall(fnn.tensor, {1, 2, 3}, {2, 2})
      assert.is_false(ok)
      assert.matches('tensor: 3 values for shape %[2,2%] %(4 elements%)', err)
   end)

   it('refuses bad sizes and a too-large allocation without crashing', function()
      assert.has_error(function() fnn.zeros(2, -1) end, nil)
      local ok, err = pcall(fnn.zeros, 2, -1)
      assert.matches('zeros: size 2 is %-1, expected a non%-negative integer', err)
      ok, err = pcall(fnn.zeros, 1e9, 1e9)
      assert.is_false(ok)
      assert.matches('too large', err)
      ok, err = pcall(fnn.zeros, 1e6, 1e6 / 2)   -- 2 TB
      assert.is_false(ok)
      assert.matches('too large', err)
   end)

   it('names both shapes when broadcasting fails, at the caller\'s line', function()
      local a, b = fnn.ones(2, 3), fnn.ones(4)
      local line = debug.getinfo(1, 'l').currentline + 1
      local ok, err = pcall(function() return a + b end)
      assert.is_false(ok)
      assert.equals(('spec/tensor_spec.lua:%d: add: shapes [2,3] and [4] do not broadcast (dim 2: 3 vs 4)'):format(line), err)
      local r, msg = a:try_add(b)
      assert.is_nil(r)
      assert.equals('add: shapes [2,3] and [4] do not broadcast (dim 2: 3 vs 4)', msg)
   end)

   it('refuses non-tensors in arithmetic and dims out of range', function()
      local ok, err = pcall(function() return fnn.ones(2) + 'a' end)
      assert.matches('add: expected a tensor or a number, got a string', err)
      ok, err = pcall(function() return fnn.ones(2, 3):size(3) end)
      assert.matches('size: dim 3 out of range for %[2,3%] %(dims are 1..2 or %-2..%-1%)', err)
      ok, err = pcall(function() return fnn.ones(2, 3):size(0) end)
      assert.matches('size: dim 0 out of range', err)
      ok, err = pcall(function() return fnn.ones(2)[3] end)
      assert.matches('index: 3 out of range 1..2 for %[2%]', err)
      ok, err = pcall(function() return fnn.ones(2, 2):item() end)
      assert.matches('item: tensor %[2,2%] has 4 elements, expected exactly 1', err)
   end)

   it('refuses a freed tensor in every op', function()
      local t = fnn.ones(100)
      t:free()
      t:free()   -- harmless
      local ok, err = pcall(function() return t:exp() end)
      assert.is_false(ok)
      assert.matches('exp: tensor was freed', err)
   end)
end)
