-- The CPU random draws (core/random.c): normals by a float Box-Muller a block of pairs at a time,
-- checked against the normal distribution's CDF, moments, tails and independence; uniforms and
-- masks; and one stream per seed, the pending half of a pair included, through the state a
-- checkpoint saves.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local support = require 'spec.support'
local C = require 'fastnn.C'

local function phi(x) return 0.5 * (1 + support.erf(x / math.sqrt(2))) end

-- |observed - expected| for a count of n Bernoulli(p) trials, in standard deviations
local function sigmas(count, n, p) return math.abs(count - n * p) / math.sqrt(n * p * (1 - p)) end

describe('randn', function()
   local N = 2 ^ 20
   fnn.manual_seed(123)
   local z = fnn.randn(N)
   local zs = z:to_flat()

   it('follows the normal CDF at every half sigma from -3.5 to 3.5', function()
      local sorted = {}
      for i = 1, N do sorted[i] = zs[i] end
      table.sort(sorted)
      local j = 0
      for x = -3.5, 3.5, 0.5 do
         while j < N and sorted[j + 1] <= x do j = j + 1 end
         -- 5 sigma of the binomial count: a real defect (a skewed or clipped distribution) is far
         -- beyond it, and a correct generator fails it about once in 10^5 seeds
         assert.is_true(sigmas(j, N, phi(x)) < 5, ('P(z <= %g) = %.6f, want %.6f'):format(x, j / N, phi(x)))
      end
   end)

   it('has the moments of N(0, 1)', function()
      local m1, m2, m3, m4 = 0, 0, 0, 0
      for i = 1, N do
         local v = zs[i]
         local v2 = v * v
         m1, m2, m3, m4 = m1 + v, m2 + v2, m3 + v2 * v, m4 + v2 * v2
      end
      m1, m2, m3, m4 = m1 / N, m2 / N, m3 / N, m4 / N
      -- five standard errors at N = 2^20 (mean 0.001, variance 0.0014, third 0.0038, fourth 0.0096)
      assert.is_true(math.abs(m1) < 0.005, 'mean ' .. m1)
      assert.is_true(math.abs(m2 - 1) < 0.007, 'variance ' .. m2)
      assert.is_true(math.abs(m3) < 0.019, 'third moment ' .. m3)
      assert.is_true(math.abs(m4 - 3) < 0.048, 'fourth moment ' .. m4)
   end)

   it('reaches the tails: the share beyond 4 sigma, and nothing past the 6.7 sigma bound', function()
      local beyond, biggest = 0, 0
      for i = 1, N do
         local a = math.abs(zs[i])
         if a > 4 then beyond = beyond + 1 end
         if a > biggest then biggest = a end
      end
      assert.is_true(sigmas(beyond, N, 6.334248e-5) < 5, ('P(|z| > 4) = %g, want 6.33e-5'):format(beyond / N))
      assert.is_true(biggest > 4.5 and biggest <= 6.67, 'largest |z| ' .. biggest)
   end)

   it('draws neighbours independently (the two halves of a pair and of a block)', function()
      local function corr(lag)
         local s = 0
         for i = 1, N - lag do s = s + zs[i] * zs[i + lag] end
         return s / (N - lag)
      end
      -- a block of 256 pairs stores its first halves, then its second: lag 256 meets the partner
      for _, lag in ipairs{1, 255, 256, 257} do
         assert.is_true(math.abs(corr(lag)) < 0.005, ('correlation at lag %d: %g'):format(lag, corr(lag)))
         local sq = 0
         for i = 1, N - lag do sq = sq + zs[i] ^ 2 * zs[i + lag] ^ 2 end
         -- E[z1^2 z2^2] is 1 for independent normals; the radius a pair shares would raise it
         assert.is_true(math.abs(sq / (N - lag) - 1) < 0.02, ('E[z^2 z^2] at lag %d: %g'):format(lag, sq / (N - lag)))
      end
   end)

   it('gives every element of odd and tiny sizes a draw, and resumes the pending half from a saved state', function()
      fnn.manual_seed(9)
      local a = fnn.randn(3):to_flat()          -- a pair and a half: one half waits
      local state = ffi.new('uint64_t[6]')
      C.fnn_random_get_state(state)
      local b = fnn.randn(1001):to_flat()
      fnn.randn(7)
      assert.equals(0, C.fnn_random_set_state(state))
      assert.same(b, fnn.randn(1001):to_flat())
      local seen = {}
      for _, v in ipairs(a) do seen[v] = true end
      for _, v in ipairs(b) do
         assert.is_true(v == v and math.abs(v) < 7)
         assert.is_nil(seen[v], 'a value drawn twice: ' .. v)
         seen[v] = true
      end
      assert.same({}, fnn.randn(0):to_flat())
   end)

   it('scales by the options of normal_ and stays reproducible per seed', function()
      fnn.manual_seed(5)
      local a = fnn.randn(10001):to_flat()
      fnn.manual_seed(5)
      local b = fnn.randn(10001):to_flat()
      assert.same(a, b)
      fnn.manual_seed(5)
      local c = fnn.init.normal_({10001}, {mean = 3, std = 0.5}):to_flat()
      for i = 1, #a do assert.is_true(math.abs(c[i] - (3 + 0.5 * a[i])) < 1e-6) end
   end)
end)

describe('rand and bernoulli masks', function()
   it('are uniform on [0, 1) and keep a share p', function()
      fnn.manual_seed(77)
      local n = 2 ^ 20
      local u = fnn.rand(n):to_flat()
      local bins = {}
      for i = 1, 16 do bins[i] = 0 end
      for i = 1, n do
         local v = u[i]
         assert.is_true(v >= 0 and v < 1)
         local k = math.floor(v * 16) + 1
         bins[k] = bins[k] + 1
      end
      for k = 1, 16 do assert.is_true(sigmas(bins[k], n, 1 / 16) < 5, ('bin %d: %d'):format(k, bins[k])) end
      local kept = fnn.nn.Dropout(0.3):forward(fnn.ones(n)):gt(0):sum():item()
      assert.is_true(sigmas(kept, n, 0.7) < 5, 'dropout kept ' .. kept)
   end)
end)
