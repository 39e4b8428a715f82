-- fnn.profile (lua/fastnn/profile.lua, core/profile.c): exact call counts per op and pass for
-- known work (forward calls, backward rules, optimizer updates), nested brackets counted once
-- and apart (a Param read inside a layer's call), the report's sums and text, errors inside the
-- profiled function, and no nesting. Times are only checked for what holds on any machine
-- (non-negative, parts within the whole), never for speed.
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'

local function row(report, name, kind)
   for _, r in ipairs(report.rows) do
      if r.name == name and r.kind == kind then return r end
   end
   return nil
end
local function calls(report, name, kind)
   local r = row(report, name, kind)
   return r and r.calls or 0
end

describe('fnn.profile', function()
   -- tensors keep the first load's methods (the metatype is bound once per process): a later load's
   -- profile must count them too (busted loads fastnn afresh for each spec file; this counted 0)
   it('counts the ops of tensor methods when fastnn was loaded again in the process', function()
      support.second_load(function(fnn2)
         local a = fnn.randn(4, 3)
         local report = fnn2.profile(function()
            for _ = 1, 5 do local _ = a:relu() end
            local _ = fnn2.relu(a)
         end)
         assert.equals(6, calls(report, 'relu', 'forward'))
      end)
   end)

   it('counts every op call and backward rule of known work, by name and pass', function()
      local a, b = fnn.randn(4, 3), fnn.randn(4, 3)
      local p = fnn.Param(fnn.randn(3, 5))
      local report = fnn.profile(function()
         for _ = 1, 7 do local _ = a + b end
         for _ = 1, 3 do local _ = a:relu() end
         local y = a:matmul(p:tensor()):tanh():sum()
         y:backward()
      end)
      assert.equals(7, calls(report, 'add', 'forward'))
      assert.equals(3, calls(report, 'relu', 'forward'))
      assert.equals(1, calls(report, 'matmul', 'forward'))
      assert.equals(1, calls(report, 'tanh', 'forward'))
      assert.equals(1, calls(report, 'matmul', 'backward'))
      assert.equals(1, calls(report, 'tanh', 'backward'))
      assert.equals(1, calls(report, 'sum', 'backward'))
      assert.equals(0, calls(report, 'relu', 'backward'))   -- no graph through a and b
      for _, r in ipairs(report.rows) do
         assert.is_true(r.ms >= 0 and r.calls >= 1, r.name)
         assert.is_truthy(({forward = true, backward = true, step = true})[r.kind], r.kind)
      end
   end)

   it('times a layer once though it reads its Params inside its own call, and counts optimizer updates', function()
      fnn.manual_seed(3)
      local m = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
      local opt = fnn.optim.Adam(m:parameters(), 1e-3)
      local x = fnn.randn(5, 6)
      local report = fnn.profile(function()
         for _ = 1, 3 do
            opt:zero_grad()
            m(x):sum():backward()
            opt:step()
         end
      end)
      assert.equals(6, calls(report, 'linear', 'forward'))    -- 2 layers x 3 steps, each counted once
      assert.equals(6, calls(report, 'linear', 'backward'))
      assert.equals(3, calls(report, 'relu', 'forward'))
      assert.equals(12, calls(report, 'adam', 'step'))        -- 4 parameters x 3 steps
      -- the reads of weight and bias inside Linear's call are their own rows, not the layer's
      assert.is_true(calls(report, 'ref', 'forward') >= 12)
   end)

   it('reports rows by time, their sum, the wall time, and a text table', function()
      local x = fnn.randn(64, 64)
      local report, r1, r2 = fnn.profile(function(k)
         local y
         for _ = 1, k do y = x:matmul(x) end
         return y:numel(), 'done'
      end, 4)
      assert.equals(4096, r1)                                 -- fn's results follow the report
      assert.equals('done', r2)
      local sum = 0
      for i, r in ipairs(report.rows) do
         sum = sum + r.ms
         if i > 1 then assert.is_true(report.rows[i - 1].ms >= r.ms) end
      end
      assert.is_true(math.abs(sum - report.op_ms) < 1e-9)
      assert.is_true(report.op_ms <= report.wall_ms + 1e-6)
      assert.equals(4, calls(report, 'matmul', 'forward'))
      local text = tostring(report)
      assert.matches('^op%s+pass%s+calls%s+ms%s+share\n', text)
      assert.matches('\nmatmul%s+forward%s+4%s', text)
      assert.matches('ops [%d.]+ ms of [%d.]+ ms wall', text)
      assert.matches('%(1 more rows%)', report:text(0))
   end)

   it('stops on an error inside the function and raises it unchanged; profiles do not nest', function()
      local ok, err = pcall(fnn.profile, function() local _ = fnn.ones(2) + fnn.ones(3) end)
      assert.is_false(ok)
      assert.matches('profile_spec%.lua:%d+: add: shapes %[2%] and %[3%]', err)
      -- off again: a new profile starts, and the failed one's work is not in it
      local report = fnn.profile(function() local _ = fnn.ones(2) * 2 end)
      assert.equals(0, calls(report, 'add', 'forward'))
      assert.equals(1, calls(report, 'mul_scalar', 'forward'))
      local inner_ok, inner_err
      fnn.profile(function() inner_ok, inner_err = pcall(fnn.profile, function() end) end)
      assert.is_false(inner_ok)
      assert.matches('profile: this thread is already profiling', inner_err)
      assert.matches('profile: expected a function, got number', select(2, pcall(fnn.profile, 3)))
   end)

   it('keeps counting right after ops that failed and were caught inside the profile', function()
      local report = fnn.profile(function()
         for _ = 1, 20 do pcall(function() local _ = fnn.ones(2) + fnn.ones(3) end) end
         local x = fnn.ones(4)
         for _ = 1, 3 do local _ = x * 3 end
      end)
      assert.equals(20, calls(report, 'add', 'forward'))          -- the failed calls ran, and count
      assert.equals(3, calls(report, 'mul_scalar', 'forward'))
      assert.equals(41, calls(report, 'full', 'forward'))         -- ones: 40 in the loop, then x
      local add = row(report, 'add', 'forward')
      assert.is_true(add.ms <= report.wall_ms)
   end)

   it('records nothing outside a profile', function()
      for _ = 1, 5 do local _ = fnn.ones(3) + 1 end
      local report = fnn.profile(function() end)
      assert.same({}, report.rows)
      assert.equals(0, report.op_ms)
   end)
end)
