-- fastnn from several host threads at once: spec/hosts/threads_host (built with the library)
-- runs spec/hosts/threads_worker.lua in 4 threads, each its own lua_State: inference under
-- no_grad, training steps with grad on, seeded random draws and shape errors, all at once, and
-- every thread must give the figures it gives alone, which must be this process's figures.
-- Under the TSan build (tools/test.sh --sanitize thread) the same run must be race-free.
-- The host is $FASTNN_THREADS_HOST, else threads_host beside $FASTNN_LIB, else build/threads_host.
local cwd = io.popen('pwd'):read('*l')
local function quote(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end
local function absolute(path) return path:sub(1, 1) == '/' and path or (cwd .. '/' .. path) end
local function dirname(path) return path:match('^(.*)/[^/]*$') or '.' end

local HOST = (function()
   local env = os.getenv('FASTNN_THREADS_HOST')
   if env and env ~= '' then return absolute(env) end
   local lib = os.getenv('FASTNN_LIB')
   if lib and lib ~= '' then return absolute(dirname(lib)) .. '/threads_host' end
   return absolute('build/threads_host')
end)()
local WORKER = cwd .. '/spec/hosts/threads_worker.lua'

local function run(args, env)
   local p = io.popen(('%sFASTNN_LUA_DIR=%s %s %s 2>&1; echo "rc=$?"'):format(
      env or '', quote(cwd .. '/lua'), quote(HOST), args))
   local out = p:read('*a')
   p:close()
   return out
end

describe('host threads', function()
   local ROUNDS = 30

   it('run inference, no_grad, backward and random draws at once, each as alone', function()
      local out = run(('%s 4 %d'):format(quote(WORKER), ROUNDS))
      assert.matches('threads_host: 4 threads agree\nrc=0\n$', out)
      local work = dofile(WORKER)
      for id = 1, 4 do
         -- this process, one thread: the same figures
         assert.matches(('\nthread %d: %s\n'):format(id, work(id, ROUNDS)), '\n' .. out, 1, true)
      end
   end)

   it('gives different draws to different seeds, so the comparison can fail', function()
      local work = dofile(WORKER)
      local a, b = work(1, 2), work(2, 2)
      assert.are_not.equal(a:match('draws (%S+)'), b:match('draws (%S+)'))
      assert.equals(a, work(1, 2))
   end)

   it('gets back the memory of threads that ended', function()
      -- each thread frees 2000 small tensors into its free lists (up to 4 MB kept): before the
      -- lists were released at thread exit, rounds 5 to 20 of 2 threads grew by about 120 MB.
      -- Under ASan (tools/test.sh --sanitize) freed memory waits in its quarantine: none here.
      local out = run('--churn ' .. quote(cwd .. '/spec/hosts/churn_worker.lua') .. ' 20 2',
                      'ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0:thread_local_quarantine_size_kb=0" ')
      assert.matches('rc=0\n$', out)
      local rss = {}
      for r, mb in out:gmatch('round (%d+) rss_mb ([%d.]+)') do rss[tonumber(r)] = tonumber(mb) end
      assert.equals(20, #rss)
      assert.is_true(rss[20] - rss[5] < 40, ('RSS grew from %.1f MB (round 5) to %.1f MB (round 20)'):format(rss[5], rss[20]))
   end)

   it('reports an error raised in a thread and exits 1', function()
      local bad = os.tmpname()
      local f = assert(io.open(bad, 'w'))
      f:write("local fnn = require 'fastnn'\n"
              .. "return function(id) return (fnn.ones(id, 2) + fnn.ones(3, 3)):sum():item() end\n")
      f:close()
      local out = run(quote(bad) .. ' 2 1')
      os.remove(bad)
      assert.matches('rc=1\n$', out)
      assert.matches('add: [^\n]*%[1,2%][^\n]*%[3,3%]', out)
   end)
end)
