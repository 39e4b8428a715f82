-- The fastnn-lua launcher (bin/fastnn-lua.c, bin/host.c) and the embedding example, run as
-- separate processes: options, the `arg` table, exit codes, error reports, module and
-- library lookup from any directory, Ctrl-C as a catchable error, the REPL.
-- The launcher is $FASTNN_LAUNCHER, else fastnn-lua beside $FASTNN_LIB, else build/fastnn-lua.

local process = require 'spec.process'
local exists, read_all, write_file, quote = process.exists, process.read_all, process.write_file, process.quote
local cwd, dirname = process.cwd, process.dirname

local LAUNCHER = process.program('fastnn-lua', 'FASTNN_LAUNCHER')
local BUILD_DIR = dirname(LAUNCHER)

-- Run the launcher (or opts.program) with args; opts: cwd, env (set), unset (names), stdin.
-- Returns {rc = exit status as the shell sees it, out = stdout, err = stderr}.
local function run(args, opts)
   opts = opts or {}
   local out, err = os.tmpname(), os.tmpname()
   local parts = {}
   if opts.cwd then parts[#parts + 1] = 'cd ' .. quote(opts.cwd) .. ' &&' end
   parts[#parts + 1] = 'env'
   for _, name in ipairs(opts.unset or {}) do parts[#parts + 1] = '-u ' .. name end
   for k, v in pairs(opts.env or {}) do parts[#parts + 1] = k .. '=' .. quote(v) end
   parts[#parts + 1] = 'timeout 60 ' .. quote(opts.program or LAUNCHER)   -- a hang fails, not blocks
   for _, a in ipairs(args) do parts[#parts + 1] = quote(a) end
   local cmd = table.concat(parts, ' ')
   if opts.stdin then
      cmd = 'printf %s ' .. quote(opts.stdin) .. ' | ' .. cmd
   else
      cmd = cmd .. ' </dev/null'
   end
   local p = io.popen('(' .. cmd .. ') >' .. out .. ' 2>' .. err .. '; echo $?')
   local rc = tonumber(p:read('*a'))
   p:close()
   local r = {rc = rc, out = read_all(out), err = read_all(err)}
   os.remove(out)
   os.remove(err)
   return r
end

local function script(text)
   local path = process.tmpname('.lua')
   write_file(path, text)
   return path
end

-- what a shell in another directory has: no hints about where fastnn is
local NO_HINTS = {'FASTNN_LIB', 'FASTNN_LUA_DIR', 'LUA_PATH', 'LUA_CPATH', 'LUA_INIT'}

describe('fastnn-lua', function()
   it('is built', function()
      assert.is_true(exists(LAUNCHER), 'no launcher at ' .. LAUNCHER)
   end)

   it('runs -e chunks in order and prints their output', function()
      local r = run{'-e', 'print(1+1)'}
      assert.equals(0, r.rc)
      assert.equals('2\n', r.out)
      r = run{'-e', 'x = 20', '-e', 'x = x + 1', '-e', 'print(x * 2)'}
      assert.equals(0, r.rc)
      assert.equals('42\n', r.out)
      assert.equals('', r.err)
   end)

   it('sets arg as luajit does and passes the arguments to the script as ...', function()
      local path = script([[
         io.write(arg[0], '|', arg[1], '|', tostring(arg[2]), '|', tostring(arg[3]), '|',
                  select('#', ...), '|', (...), '|', arg[-1], '|', tostring(arg[-2]), '\n')
      ]])
      local r = run{path, 'a', 'b c'}
      assert.equals(0, r.rc)
      assert.equals(path .. '|a|b c|nil|2|a|' .. LAUNCHER .. '|nil\n', r.out)
      -- options before the script get negative indices, the interpreter the lowest
      r = run{'-e', 'y=1', path, '--flag'}
      assert.equals(0, r.rc)
      assert.equals(path .. '|--flag|nil|nil|1|--flag|y=1|-e\n', r.out)
      -- no script: arg[0] is nil and the options count back from there
      r = run{'-e', 'print(arg[0], arg[-1], arg[-2], arg[-3] == ' .. ("%q"):format(LAUNCHER) .. ')'}
      assert.equals('nil\tprint(arg[0], arg[-1], arg[-2], arg[-3] == ' .. ("%q"):format(LAUNCHER) .. ')\t-e\ttrue\n', r.out)
      os.remove(path)
   end)

   it('reads the script from stdin with - and runs stdin when given nothing', function()
      local r = run({'-', 'p', 'q'}, {stdin = 'print(arg[0], ...)'})
      assert.equals(0, r.rc)
      assert.equals('-\tp\tq\n', r.out)
      r = run({}, {stdin = 'print(40 + 2)'})
      assert.equals(0, r.rc)
      assert.equals('42\n', r.out)
   end)

   it('prints its version and LuaJIT\'s with -v and --version, the same as fnn._VERSION', function()
      for _, flag in ipairs{'-v', '--version'} do
         local r = run{flag}
         assert.equals(0, r.rc)
         assert.matches('^fastnn%-lua %d+%.%d+%.%d+ %(LuaJIT 2%.1[%w%.%-]*%)\n$', r.out)
      end
      local r = run{'-v', '-e', "print(require('fastnn')._VERSION)"}
      assert.equals(0, r.rc)
      local launcher_version, lib_version = r.out:match('^fastnn%-lua (%S+) .-\n(%S+)\n$')
      assert.equals(lib_version, launcher_version)
   end)

   it('prints usage for -h and refuses unknown options with exit 1', function()
      local r = run{'-h'}
      assert.equals(0, r.rc)
      assert.matches('usage: fastnn%-lua', r.out)
      r = run{'--no-such-option'}
      assert.equals(1, r.rc)
      assert.matches('usage: fastnn%-lua', r.err)
      r = run{'-e'}
      assert.equals(1, r.rc)
   end)

   it('reports an uncaught error with its message and a traceback and exits 1', function()
      local r = run{'-e', "error('boom')"}
      assert.equals(1, r.rc)
      assert.matches('^fastnn%-lua: %(command line%):1: boom\n', r.err)
      assert.matches('stack traceback', r.err)
      local path = script('local function f() local t = nil; return t.x end\nf()\n')
      r = run{path}
      assert.equals(1, r.rc)
      assert.matches(":1: attempt to index local 't'", r.err, 1, true)
      assert.matches('stack traceback', r.err)
      assert.matches(':2: in main chunk', r.err, 1, true)
      os.remove(path)
      r = run{'-e', 'error(setmetatable({}, {__tostring = function() return "custom error" end}))'}
      assert.equals(1, r.rc)
      assert.matches('^fastnn%-lua: custom error\n', r.err)
      r = run{'-e', 'error({})'}
      assert.equals(1, r.rc)
      assert.matches('error object is a table value', r.err, 1, true)
      r = run{'-e', 'x = = 1'}
      assert.equals(1, r.rc)
      assert.matches("unexpected symbol near '='", r.err, 1, true)
      r = run{'/nonexistent/script.lua'}
      assert.equals(1, r.rc)
      assert.matches('cannot open /nonexistent/script.lua', r.err, 1, true)
   end)

   it('exits 0 when a script finishes and with n for os.exit(n)', function()
      assert.equals(0, run{'-e', 'local x = 1'}.rc)
      assert.equals(3, run{'-e', 'os.exit(3)'}.rc)
      assert.equals(0, run{'-e', 'os.exit(true)'}.rc)
      assert.equals(1, run{'-e', 'os.exit(false)'}.rc)
   end)

   it('finds the fastnn modules and library from another directory with no hints', function()
      local r = run({'-e', "local fnn = require 'fastnn'; print(fnn.ones(2, 2):sum():item())"},
                    {cwd = '/tmp', unset = NO_HINTS})
      assert.equals('', r.err)
      assert.equals(0, r.rc)
      assert.equals('4\n', r.out)
      -- the build-tree launcher uses the library of its own build
      r = run({'-e', 'print(FASTNN_LIB_PATH)'}, {cwd = '/tmp', unset = NO_HINTS})
      local lib = r.out:match('^(.-)\n$')
      assert.truthy(lib and exists(lib), 'FASTNN_LIB_PATH is not a file: ' .. r.out)
      assert.matches('libfastnn%.so', lib)
   end)

   it('takes the module dir from FASTNN_LUA_DIR first', function()
      local dir = os.tmpname()
      os.remove(dir)
      assert.equals(0, run({'-p', dir .. '/fastnn'}, {program = 'mkdir'}).rc)
      write_file(dir .. '/fastnn/init.lua', "return {marker = 'from FASTNN_LUA_DIR'}\n")
      local r = run({'-e', "print(require('fastnn').marker)"},
                    {cwd = '/tmp', unset = NO_HINTS, env = {FASTNN_LUA_DIR = dir}})
      assert.equals(0, r.rc)
      assert.equals('from FASTNN_LUA_DIR\n', r.out)
      os.remove(dir .. '/fastnn/init.lua')
      os.remove(dir .. '/fastnn')
      os.remove(dir)
   end)

   -- Scripts signal themselves. Not with os.execute('kill -INT ' .. pid): system() ignores
   -- SIGINT in the caller while its child runs, so that signal would be lost. io.popen and
   -- kill(2) deliver it like a Ctrl-C from the terminal.
   local PRELUDE = [[
      local ffi = require 'ffi'
      ffi.cdef 'int getpid(void); int kill(int pid, int sig); int fastnn_interrupted(void);'
      local pid = ffi.C.getpid()
      io.stdout:setvbuf('no')
   ]]

   it('turns Ctrl-C into the error "interrupted", which pcall catches, and goes on', function()
      local path = script(PRELUDE .. [[
         local ok, err = pcall(function()
            local n = 0
            while true do
               n = n + 1
               if n == 1000 then io.popen('kill -INT ' .. pid):close() end
            end
         end)
         print(ok, err)
         local ok2, err2 = pcall(function()      -- a second, later Ctrl-C is again catchable
            local steps = 0
            ffi.C.kill(pid, 2)
            while true do steps = steps + 1 end
         end)
         print(ok2, err2)
         print('saved checkpoint')
      ]])
      local r = run{path}
      assert.equals('', r.err)
      assert.equals(0, r.rc)
      assert.matches('^false\t[^\n]*interrupted\nfalse\t[^\n]*interrupted\nsaved checkpoint\n$', r.out)
      os.remove(path)
   end)

   it('stops a loop that runs Lua calls when Ctrl-C comes from outside', function()
      local path = script(PRELUDE .. [[
         os.execute('(sleep 0.3; kill -INT ' .. pid .. ') &')
         local function step(x) return x * 0.5 + 1 end
         local ok, err = pcall(function()
            local x, t0 = 0, os.time()
            while os.time() - t0 < 20 do x = step(x) end
            return 'not interrupted'
         end)
         print(ok, err)
      ]])
      local r = run{path}
      assert.equals(0, r.rc)
      assert.matches('^false\t[^\n]*interrupted\n$', r.out)
      os.remove(path)
   end)

   it('stops a compiled loop of tensor ops at its next op, at the user\'s line, every time', function()
      -- x = x + 1 on a tensor compiles into one trace (the binding inlined, one FFI call): the
      -- host's hook never runs there, so the op bindings read the host's flag themselves
      local path = script(PRELUDE .. [[
         local fnn = require 'fastnn'
         for round = 1, 5 do
            os.execute('(sleep 0.2; kill -INT ' .. pid .. ') &')
            local ok, err = pcall(function()
               local x = fnn.zeros(1)
               for _ = 1, 1e10 do x = x + 1 end  -- line 10 of the script
               return 'not interrupted'
            end)
            print(round, ok, err)
         end
         print('saved checkpoint')
      ]])
      local r = run{path}
      assert.equals('', r.err)
      assert.equals(0, r.rc)
      local expected = {}
      for round = 1, 5 do
         expected[round] = ('%d\tfalse\t%s:10: interrupted\n'):format(round, path)
      end
      assert.equals(table.concat(expected) .. 'saved checkpoint\n', r.out)
      os.remove(path)
   end)

   it('lets a compiled loop poll fastnn_interrupted(), which consumes the Ctrl-C', function()
      local path = script(PRELUDE .. [[
         print('before', ffi.C.fastnn_interrupted())
         os.execute('(sleep 0.3; kill -INT ' .. pid .. ') &')
         local ok, err = pcall(function()
            for _ = 1, 1e11 do                   -- one trace: no Lua call, no exit, no hook
               if ffi.C.fastnn_interrupted() ~= 0 then return 'polled' end
            end
            return 'not interrupted'
         end)
         print(ok, err)
         for i = 1, 1000 do local _ = {} end     -- no "interrupted" error comes after the poll
         print('done')
      ]])
      local r = run{path}
      assert.equals('', r.err)
      assert.equals(0, r.rc)
      assert.equals('before\t0\ntrue\tpolled\ndone\n', r.out)
      os.remove(path)
   end)

   it('dies of a second Ctrl-C that comes before the first was handled', function()
      local path = script(PRELUDE .. [[
         -- both land while this process waits inside C; the second is sent once the first
         -- left the kernel's pending set (/proc), or the two would merge into one
         local cmd = ([=[
            kill -INT PID
            for i in $(seq 500); do
               pend=$(awk '/^(SigPnd|ShdPnd):/ {s = s $2} END {print s}' /proc/PID/status)
               case "$pend" in *[1-9a-f]*) sleep 0.01 ;; *) break ;; esac
            done
            kill -INT PID]=]):gsub('PID', pid)
         io.popen(cmd):close()
         print('still running')
      ]])
      local r = run{path}
      assert.equals(130, r.rc)                  -- the shell's 128 + SIGINT
      assert.equals('', r.out)
      os.remove(path)
   end)

   it('has a REPL that prints expression values and continues incomplete chunks', function()
      local r = run({'-i'}, {stdin = '1+1\nx = 5\nx, x * 2\nt = {\n1,\n2,\n3}\nprint(#t)\n=x\nerror("bad")\nprint("after")\n'})
      assert.equals(0, r.rc)
      assert.matches('^fastnn%-lua [^\n]+\n', r.out)
      assert.matches('> 2\n', r.out, 1, true)
      assert.matches('5\t10\n', r.out, 1, true)
      assert.matches('>> ', r.out, 1, true)
      assert.matches('> >> >> > 3\n', r.out, 1, true) -- a table over three lines, then its length
      assert.matches('> 5\n', r.out, 1, true)
      assert.matches('bad', r.err, 1, true)
      assert.matches('after\n', r.out, 1, true)
   end)
end)

describe('examples/embed_host', function()
   -- (spec/embed_spec.lua checks its lines and figures in detail)
   it('runs inference in 4 threads, each with its own lua_State, sharing one checkpoint', function()
      local r = run({}, {program = BUILD_DIR .. '/embed_host', cwd = '/tmp', unset = NO_HINTS})
      assert.equals('', r.err)
      assert.equals(0, r.rc)
      for id = 1, 4 do
         assert.matches('thread ' .. id .. ': 200 runs, output %[8,4%] bit%-equal to the single%-thread run', r.out)
      end
      assert.matches('embed_host: 4 threads agree\n', r.out, 1, true)
   end)
end)
