-- The Lua GC cannot see C buffers; the binding collects when the core's live
-- bytes grow past a threshold, so loops of large temporaries stay flat.
local fnn = require 'fastnn'

describe('memory', function()
   it('a loop of 1 MB temporaries stays under a fixed bound without collectgarbage', function()
      collectgarbage(); collectgarbage()
      local base = fnn.live_bytes()
      local a = fnn.ones(256, 1024)          -- 1 MB
      local peak = 0
      for _ = 1, 3000 do                     -- 3 GB allocated in total
         local t = a + 1
         t = t * 2
         peak = math.max(peak, fnn.live_bytes() - base)
      end
      assert.is_true(peak < 256 * 1024 * 1024, ('live bytes peaked at %d'):format(peak))
   end)

   it('a training-like loop with graphs stays flat too', function()
      local p = fnn.Param(fnn.randn(512, 512))
      collectgarbage(); collectgarbage()
      local base = fnn.live_bytes()
      local peak = 0
      for _ = 1, 300 do
         local y = (p:tensor() * 2):tanh()
         y:backward(fnn.ones(512, 512))
         p:zero_grad()
         peak = math.max(peak, fnn.live_bytes() - base)
      end
      assert.is_true(peak < 256 * 1024 * 1024, ('live bytes peaked at %d'):format(peak))
   end)

   it('refuses an allocation that cannot succeed with a clear error, and keeps working', function()
      local ok, err = pcall(fnn.ones, 1e12)
      assert.is_false(ok)
      assert.matches('too large to allocate', err)
      assert.equals(4, fnn.ones(2, 2):sum():item())
   end)
end)
