-- Out of memory: an allocation the machine cannot give raises an error naming the op, the bytes
-- asked for and the bytes live; nothing crashes, nothing leaks, and the process goes on.
-- Sizes past 2^40 bytes are refused before the OS is asked, so they fail on any machine; an
-- allocation the OS refuses runs in a child process whose address space is capped (ulimit -v, or
-- under a sanitizer, which reserves terabytes of shadow memory, its max_allocation_size_mb), so
-- no size here is ever touched or depends on this machine's memory.
local fnn = require 'fastnn'

local LIVE = '%(%d[%d.]* [KMGTP]?B live%)'

local function refused(pattern, f, ...)
   local ok, err = pcall(f, ...)
   assert.is_false(ok)
   assert.matches(pattern, err)
   assert.matches(LIVE, err)
   return err
end

describe('an allocation that cannot succeed', function()
   it('zeros(2^40) names zeros, the bytes and the bytes live', function()
      local err = refused('zeros: cannot allocate 4398046511104 bytes', fnn.zeros, 2^40)
      assert.matches('too large to allocate', err, 1, true)
      refused('ones: cannot allocate 4398046511104 bytes', fnn.ones, 2^40)
      refused('empty: cannot allocate 8796093022208 bytes', fnn.empty, 2^40, {dtype = 'int64'})
      refused('randn: cannot allocate 17592186044416 bytes', fnn.randn, 2^21, 2^21)
      refused('full: cannot allocate 4398046511104 bytes', fnn.full, {2^20, 2^20}, 3)
   end)

   it('a shape whose bytes pass int64 is refused, not wrapped around', function()
      refused('zeros: cannot allocate 9223372036854775808 bytes', fnn.zeros, 2^31, 2^30)   -- 2^63 bytes
   end)

   it('an op whose output would not fit names the op', function()
      local a, b = fnn.ones(2^21, 1), fnn.ones(1, 2^21)        -- 8 MB each; the outputs 16 TB
      refused('^[^\n]*matmul: cannot allocate 17592186044416 bytes', function() return a:matmul(b) end)
      refused('^[^\n]*add: cannot allocate 17592186044416 bytes', function() return a + b end)
      refused('^[^\n]*mul: cannot allocate 17592186044416 bytes', function() return a * b end)
   end)

   it('in backward names the op whose gradient did not fit', function()
      -- expand is a view and narrow/select take one row of it: the forward reads 2^21 elements;
      -- the gradient of narrow (select) is the input's shape, 16 TB
      local p = fnn.Param(fnn.ones(1, 1))
      local y = p:tensor():expand(2^21, 2^21):narrow(1, 1, 1):sum()
      local err = refused('narrow: cannot allocate 17592186044416 bytes', function() y:backward() end)
      assert.matches('too large to allocate', err, 1, true)
      local z = p:tensor():expand(2^21, 2^21):select(1, 2):sum()
      refused('select: cannot allocate 17592186044416 bytes', function() z:backward() end)
      -- the engine let go of the name: a creator after backward names itself again
      refused('^zeros: cannot allocate', fnn.zeros, 2^40)
      -- and the graph still works
      local w = fnn.Param(fnn.ones(2, 2))
      ;(w:tensor() * 3):sum():backward()
      assert.same({3, 3, 3, 3}, w:grad():to_flat())
   end)

   it('leaves the live bytes as they were and allocates normally afterwards', function()
      collectgarbage(); collectgarbage()
      local before = fnn.live_bytes()
      for _ = 1, 20 do
         pcall(fnn.zeros, 2^40)
         pcall(function() return fnn.ones(2^21, 1):matmul(fnn.ones(1, 2^21)) end)
      end
      collectgarbage(); collectgarbage()
      assert.equals(before, fnn.live_bytes())
      local x = fnn.ones(300, 300)                               -- past the inline and small sizes
      assert.equals(90000, x:sum():item())
      assert.equals(300 * 300 * 300, x:matmul(x):sum():item())
   end)
end)

describe('an allocation the OS refuses', function()
   local function quote(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end
   it('is an error naming the op, and the process goes on', function()
      local code = [[
         local fnn = require 'fastnn'
         local a, b = fnn.ones(2^16, 1), fnn.ones(1, 2^16)        -- 256 KB each; the product 16 GB
         for _, f in ipairs{function() return a:matmul(b) end, function() return a + b end,
                            function() return fnn.zeros(2^32) end} do
            local ok, err = pcall(f)
            print(ok, err)
         end
         local x = fnn.randn(256, 256)
         print('after', x:matmul(fnn.eye(256)):sub(x):abs():max():item())
      ]]
      -- an 8 GB cap: 16 GB cannot be had, whatever the machine has
      local sanitized = os.getenv('FASTNN_SAN_PRELOAD')
      local cap = sanitized and ('ASAN_OPTIONS="$ASAN_OPTIONS:max_allocation_size_mb=8192" '
                                 .. 'TSAN_OPTIONS="$TSAN_OPTIONS:max_allocation_size_mb=8192" ')
                            or 'ulimit -v 8388608; '
      local p = io.popen(('%sLUA_PATH=%s luajit -e %s 2>&1; echo "rc=$?"'):format(
         cap, quote('./lua/?.lua;./lua/?/init.lua;;'), quote(code)))
      local out = p:read('*a')
      p:close()
      assert.matches('rc=0\n$', out)
      assert.matches('false\t[^\n]*matmul: cannot allocate 17179869184 bytes %([^\n]*live%): out of memory\n', out)
      assert.matches('false\t[^\n]*add: cannot allocate 17179869184 bytes %([^\n]*live%): out of memory\n', out)
      assert.matches('false\t[^\n]*zeros: cannot allocate 17179869184 bytes %([^\n]*live%): out of memory\n', out)
      assert.matches('after\t0\n', out, 1, true)
   end)
end)
