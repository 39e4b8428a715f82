-- fnn.init: PyTorch's formulas for bounds and standard deviations.
local fnn = require 'fastnn'

local function stats(t)
   local v = t:to_flat()
   local mean, lo, hi = 0, math.huge, -math.huge
   for _, x in ipairs(v) do mean = mean + x; lo = math.min(lo, x); hi = math.max(hi, x) end
   mean = mean / #v
   local var = 0
   for _, x in ipairs(v) do var = var + (x - mean) ^ 2 end
   return mean, math.sqrt(var / #v), lo, hi
end

describe('init', function()
   before_each(function() fnn.manual_seed(7) end)

   it('kaiming_uniform stays within gain * sqrt(3 / fan_in)', function()
      local t = fnn.init.kaiming_uniform({64, 100}, {nonlinearity = 'relu'})
      assert.same({64, 100}, t:shape())
      local bound = math.sqrt(2) * math.sqrt(3 / 100)
      local _, std, lo, hi = stats(t)
      assert.is_true(lo >= -bound and hi <= bound)
      assert.is_true(math.abs(std - bound / math.sqrt(3)) < 0.01)
   end)

   it('kaiming_normal uses fan_out on request, and conv fans include the kernel', function()
      local t = fnn.init.kaiming_normal({32, 16, 3, 3}, {mode = 'fan_out', nonlinearity = 'relu'})
      local _, std = stats(t)
      assert.is_true(math.abs(std - math.sqrt(2 / (32 * 9))) < 0.01)
   end)

   it('xavier_uniform and xavier_normal use (fan_in + fan_out)', function()
      local u = fnn.init.xavier_uniform({200, 300}, {gain = 2})
      local bound = 2 * math.sqrt(6 / 500)
      local _, _, lo, hi = stats(u)
      assert.is_true(lo >= -bound and hi <= bound and hi > 0.9 * bound)
      local _, std = stats(fnn.init.xavier_normal({200, 300}))
      assert.is_true(math.abs(std - math.sqrt(2 / 500)) < 0.005)
   end)

   it('normal_, uniform_, zeros_, constant_', function()
      local m, s = stats(fnn.init.normal_({100, 100}, {mean = 3, std = 0.5}))
      assert.is_true(math.abs(m - 3) < 0.02 and math.abs(s - 0.5) < 0.02)
      local _, _, lo, hi = stats(fnn.init.uniform_({1000}, {a = -2, b = -1}))
      assert.is_true(lo >= -2 and hi < -1)
      assert.same({0, 0}, fnn.init.zeros_{2}:to_table())
      assert.same({5, 5}, fnn.init.constant_({2}, 5):to_table())
   end)

   for _, shape in ipairs{{6, 4}, {3, 7}} do
      it(('orthogonal [%d,%d] has orthonormal rows or columns'):format(shape[1], shape[2]), function()
         local q = fnn.init.orthogonal(shape, {gain = 1}):to_table()
         local rows, cols = shape[1], shape[2]
         local tall = rows >= cols
         local n, m = tall and cols or rows, tall and rows or cols
         for i = 1, n do
            for j = 1, n do
               local d = 0
               for k = 1, m do
                  d = d + (tall and q[k][i] * q[k][j] or q[i][k] * q[j][k])
               end
               assert.is_true(math.abs(d - (i == j and 1 or 0)) < 1e-5, ('(%d,%d) = %g'):format(i, j, d))
            end
         end
      end)
   end

   it('names the initializer on a bad shape', function()
      local ok, err = pcall(fnn.init.xavier_uniform, 5)
      assert.is_false(ok)
      assert.matches('init.xavier_uniform: expected a shape table', err)
   end)
end)
