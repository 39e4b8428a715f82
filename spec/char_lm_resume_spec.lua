-- examples/char_lm.lua stopped by SIGINT (what Ctrl-C sends) and started again: it saves its
-- training state at the step it reached, exits 130, resumes at that step, and ends with the same
-- loss and parameters, bit for bit, as a run that was never interrupted. Equal parameters after
-- the remaining steps need the AdamW moments and step counts, the batches and the random state
-- to have survived, so this is the check that they did.
-- The launcher is $FASTNN_LAUNCHER, else fastnn-lua beside $FASTNN_LIB, else build/fastnn-lua.
local fnn = require 'fastnn'

local process = require 'spec.process'
local exists, quote, cwd = process.exists, process.quote, process.cwd

local LAUNCHER = process.program('fastnn-lua', 'FASTNN_LAUNCHER')

local dir = os.tmpname()
os.remove(dir)
os.execute('mkdir -p ' .. quote(dir))

local STEPS = 120
-- the quick model, logging every step so the spec sees where it is
local function args(state)
   return table.concat({quote(LAUNCHER), quote(cwd .. '/examples/char_lm.lua'), '--quick', '--seed', '7',
      '--steps', tostring(STEPS), '--log-every', '1', '--save-every', '10', '--chars', '20', '--state', quote(state),
      '--out', quote(dir)}, ' ')
end

-- runs the command line in the background of a shell that prints its pid and then its exit
-- status; on_line(line, pid) sees each output line as it comes. Returns the output and the status.
-- timeout --foreground passes a signal on to the program once; without --foreground it would also
-- signal its process group, and a second SIGINT kills (as a second Ctrl-C should).
local function run(cmdline, on_line)
   local script = 'timeout --foreground 60 ' .. cmdline .. ' </dev/null 2>&1 & pid=$!; '
      .. 'echo "pid=$pid"; wait $pid; echo "rc=$?"'
   local p = io.popen('sh -c ' .. quote(script) .. ' 2>&1')
   local pid = p:read('*l'):match('^pid=(%d+)$')
   local lines, rc = {}, nil
   for line in p:lines() do
      local r = line:match('^rc=(%d+)$')
      if r then rc = tonumber(r) else
         lines[#lines + 1] = line
         if on_line then on_line(line, pid) end
      end
   end
   p:close()
   return table.concat(lines, '\n') .. '\n', rc
end

local function final_line(out) return out:match('\n(final step %d+  loss [^\n]+)\n') end

describe('examples/char_lm.lua interrupted and resumed', function()
   teardown(function() os.execute('rm -rf ' .. quote(dir)) end)

   it('continues from the saved step and ends where an uninterrupted run ends', function()
      local ref_out, ref_rc = run(args(dir .. '/reference.fdl'))
      assert.equals(0, ref_rc, ref_out)
      local ref_final = final_line(ref_out)
      assert.is_not_nil(ref_final, ref_out)
      assert.matches('^final step ' .. STEPS .. ' ', ref_final)

      -- SIGINT (kill -INT, what Ctrl-C sends) once the run is past step 12, long before its end
      local state, sent = dir .. '/interrupted.fdl', false
      local out, rc = run(args(state), function(line, pid)
         local s = tonumber(line:match('^step (%d+)/'))
         if s and s >= 12 and not sent then
            sent = true
            io.popen('kill -INT ' .. pid):close()
         end
      end)
      assert.is_true(sent, out)
      assert.equals(130, rc, out)
      local k = tonumber(out:match('interrupted at step (%d+), saved ' .. state:gsub('%p', '%%%0') .. '\n'))
      assert.is_not_nil(k, out)
      assert.is_true(k >= 10 and k < STEPS, out)   -- 10: the last periodic save, if it came mid-update
      assert.is_nil(final_line(out), out)
      assert.is_true(exists(state))
      assert.equals(tostring(k), fnn.serialize.info(state).metadata['fdl.step'])
      assert.equals('training', fnn.serialize.info(state).metadata['fdl.kind'])

      local out2, rc2 = run(args(state))
      assert.equals(0, rc2, out2)
      assert.matches('\nresumed at step ' .. k .. ' from ', out2)
      assert.is_nil(out2:find('\nstep ' .. k .. '/', 1, true), out2)          -- step k is not trained again
      assert.matches('\nstep ' .. (k + 1) .. '/' .. STEPS .. ' ', out2)
      assert.equals(ref_final, final_line(out2))
      local function validation_line(o) return o:match('\n(validation loss [^\n]+)\n') end
      assert.is_not_nil(validation_line(ref_out))
      assert.equals(validation_line(ref_out), validation_line(out2))
      assert.equals(tostring(STEPS), fnn.serialize.info(state).metadata['fdl.step'])
   end)

   it('refuses --resume without a state file', function()
      local out, rc = run(args(dir .. '/none.fdl') .. ' --resume')
      assert.equals(1, rc, out)
      assert.matches('char_lm: %-%-resume: no state file .*none%.fdl', out)
   end)
end)
