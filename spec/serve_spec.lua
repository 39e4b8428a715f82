-- fastnn.serve inside a real nginx (Debian's nginx with libnginx-mod-http-lua, OpenResty's engine):
-- started here on a loopback port with a prefix directory of its own (no system configuration is
-- read or touched), spec/serve/app.lua as its application, Python's standard library as the
-- clients (spec/serve/client.py). Without nginx or its Lua module this spec fails: CI installs
-- them (tools/install-deps.sh).
local fnn = require 'fastnn'
local cjson = require 'cjson'
local process = require 'process'
local app = require 'serve.app'

local ROOT = process.cwd
local function sh(cmd)
   local p = io.popen(cmd .. ' 2>&1')
   local out = p:read('*a')
   local ok, _, code = p:close()
   return out, ok == true or ok == 0, code
end
local function sleep(s) os.execute('sleep ' .. s) end

-- nginx and the directory of its dynamic modules, or a failure saying what to install
local function find_nginx()
   local nginx = sh('command -v nginx || ls /usr/sbin/nginx'):match('(%S+)')
   assert(nginx and process.exists(nginx),
          'nginx is not installed: apt-get install nginx-light libnginx-mod-http-lua (tools/install-deps.sh)')
   local modules = sh(nginx .. ' -V'):match('%-%-modules%-path=(%S+)') or '/usr/lib/nginx/modules'
   for _, m in ipairs{'ndk_http_module.so', 'ngx_http_lua_module.so'} do
      assert(process.exists(modules .. '/' .. m),
             ('%s/%s is missing: apt-get install libnginx-mod-http-lua (tools/install-deps.sh)'):format(modules, m))
   end
   return nginx, modules
end

-- under tools/test.sh --sanitize the library is instrumented: nginx (not ours) must preload the
-- sanitizer runtime to load it, and its own leaks at exit are not this spec's to report
local function sanitizer_env()
   local preload = os.getenv('FASTNN_SAN_PRELOAD')
   if not preload or preload == '' then return '' end
   local asan = os.getenv('ASAN_OPTIONS')
   return ('LD_PRELOAD=%s %s'):format(process.quote(preload),
                                      asan and ('ASAN_OPTIONS=%s '):format(process.quote(asan .. ':detect_leaks=0')) or '')
end

local function free_port()
   return tonumber((sh([[python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])']])))
end

local dir = process.tmpdir()
os.execute('chmod 755 ' .. process.quote(dir))   -- nginx's workers run as nobody when the master is root
teardown(function() os.execute('rm -rf ' .. process.quote(dir)) end)

-- the weights the servers start from, a reload's, and a file a reload must refuse
local mlp, image, mlp_next = app.mlp(), app.image_model(), app.mlp()
fnn.save(mlp, dir .. '/mlp.fdl')
fnn.save(image, dir .. '/image.fdl')
fnn.save(mlp_next, dir .. '/next.fdl')
fnn.save(fnn.nn.Sequential(fnn.nn.Linear(8, 5)), dir .. '/bad.fdl')   -- other shapes
mlp:eval(); image:eval(); mlp_next:eval()

local function conf(port, prefix, extra)
   local _, modules = find_nginx()
   return ([[
load_module %s/ndk_http_module.so;
load_module %s/ngx_http_lua_module.so;
worker_processes 2;
pid %s/nginx.pid;
error_log %s/error.log info;
env FASTNN_LIB;
env FASTNN_NUM_THREADS;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %s/body;
  proxy_temp_path %s/proxy;
  fastcgi_temp_path %s/fastcgi;
  uwsgi_temp_path %s/uwsgi;
  scgi_temp_path %s/scgi;
  client_max_body_size 1m;
  client_body_buffer_size 1m;
  lua_package_path "%s/lua/?.lua;%s/lua/?/init.lua;%s/spec/?.lua;;";
  lua_shared_dict fastnn 1m;
  %s
  init_worker_by_lua_block { require('serve.app').init('%s') }
  server {
    listen 127.0.0.1:%d;
    location = /predict { content_by_lua_block { require('serve.app').predict() } }
    location = /image { content_by_lua_block { require('serve.app').image() } }
    location = /health { content_by_lua_block { require('fastnn.serve').health() } }
    location = /metrics { content_by_lua_block { require('fastnn.serve').metrics() } }
    location = /reload { content_by_lua_block { require('fastnn.serve').reload_location('%s/next.fdl') } }
    location = /reload_bad { content_by_lua_block { require('fastnn.serve').reload_location('%s/bad.fdl') } }
  }
}
]]):format(modules, modules, prefix, prefix, prefix, prefix, prefix, prefix, prefix, ROOT, ROOT, ROOT, extra or '',
           dir, port, dir, dir)
end

-- a running nginx: {port, prefix, master, client(...), log(), stop()}
local function start(name, extra, env)
   local nginx = find_nginx()
   local prefix = dir .. '/' .. name
   os.execute('mkdir -p ' .. process.quote(prefix))
   local port = free_port()
   process.write_file(prefix .. '/nginx.conf', conf(port, prefix, extra))
   local out, ok = sh(('cd %s && %s %s %s -p %s -c %s/nginx.conf'):format(process.quote(prefix), env or '',
                      sanitizer_env(), nginx, process.quote(prefix), process.quote(prefix)))
   assert(ok, 'nginx did not start: ' .. out .. (process.try_read(prefix .. '/error.log') or ''))
   local s = {port = port, prefix = prefix, name = name}
   s.master = tonumber(process.read_all(prefix .. '/nginx.pid'):match('%d+'))
   function s.log() return process.try_read(prefix .. '/error.log') or '' end
   function s.stop() os.execute(('kill -QUIT %d; sleep 0.5'):format(s.master)) end
   function s.workers()
      local list = {}
      for pid in sh('ps -o pid= --ppid ' .. s.master):gmatch('%d+') do list[#list + 1] = tonumber(pid) end
      table.sort(list)
      return list
   end
   local n = 0
   function s.client(kind, payload)
      n = n + 1
      payload.port = port
      local file = ('%s/client-%d.json'):format(prefix, n)
      process.write_file(file, cjson.encode(payload))
      local text, done = sh(('timeout 60 python3 %s/spec/serve/client.py %s %s'):format(ROOT, kind, file))
      assert(done, 'the client failed: ' .. text)
      return cjson.decode(text)
   end
   function s.requests(list) return s.client('requests', {requests = list}) end
   -- ready when /health answers 200
   for _ = 1, 100 do
      local r = sh(('python3 -c "import urllib.request as u; print(u.urlopen(\'http://127.0.0.1:%d/health\', timeout=2).status)"')
                   :format(port))
      if r:match('^200') then return s end
      sleep(0.1)
   end
   s.stop()
   error('nginx did not answer /health within 10 s:\n' .. s.log())
end

local function post(path, body) return {method = 'POST', path = path, body = body} end
local function rows_of(t) return t:to_table() end
local function max_diff(a, b)
   if type(a) == 'number' then return math.abs(a - b) end
   assert.equals(#b, #a)
   local m = 0
   for i = 1, #a do m = math.max(m, max_diff(a[i], b[i])) end
   return m
end
local function forward(model, rows) return fnn.no_grad(function() return model:forward(fnn.tensor(rows)) end):to_table() end

describe('fastnn.serve in nginx', function()
   local s, pids
   setup(function()
      s = start('main')
      pids = s.workers()
   end)
   teardown(function() if s then s.stop() end end)

   it('runs two workers of its own prefix on a loopback port', function()
      assert.equals(2, #pids)
      local h = s.requests{{method = 'GET', path = '/health'}}[1]
      assert.equals(200, h.status)
      local doc = cjson.decode(h.body)
      assert.equals('ok', doc.status)
      assert.equals(0, doc.generation)
      assert.equals(1, doc.threads)
      assert.same({8}, doc.input_shape)
   end)

   it('answers as model:forward on the same rows, to 1e-6', function()
      fnn.manual_seed(7)
      local one, three = rows_of(fnn.randn(1, 8)), rows_of(fnn.randn(3, 8))
      local r = s.requests{post('/predict', cjson.encode{inputs = one}), post('/predict', cjson.encode{inputs = three})}
      for i, rows in ipairs{one, three} do
         assert.equals(200, r[i].status, r[i].body)
         assert.equals('application/json', r[i].headers['content-type'])
         local got = cjson.decode(r[i].body).outputs
         assert.equals(#rows, #got)
         assert.is_true(max_diff(got, forward(mlp, rows)) <= 1e-6)
      end
      -- rows of shape [2,4] for the second model
      local x = fnn.randn(2, 2, 4):to_table()
      local ri = s.requests{post('/image', cjson.encode{inputs = x})}[1]
      assert.equals(200, ri.status, ri.body)
      assert.is_true(max_diff(cjson.decode(ri.body).outputs, forward(image, x)) <= 1e-6)
   end)

   it('refuses bad input with a status and a JSON error naming the problem', function()
      local row = '[1,2,3,4,5,6,7,8]'
      local big = '{"inputs": [' .. row .. ']' .. (' '):rep(17000) .. '}'
      local rows65 = {}
      for i = 1, 65 do rows65[i] = {1, 2, 3, 4, 5, 6, 7, 8} end
      local cases = {
         {post('/predict', '{"inputs": [[1,2'), 400, 'not JSON'},
         {post('/predict', '[1, 2]'), 400, 'not a JSON object'},
         {post('/predict', '{"rows": []}'), 400, 'no "inputs"'},
         {post('/predict', '{"inputs": "x"}'), 400, '"inputs" is a string'},
         {post('/predict', '{"inputs": [[1,2,3,4,5,6,7,"8"]]}'), 400, 'inputs%[0%]%[7%] is a string, expected a number'},
         {post('/predict', '{"inputs": [[1,2,3,4,5,6,7,null]]}'), 400, 'inputs%[0%]%[7%] is null'},
         {post('/predict', '{"inputs": [' .. row .. ', [1,2,3]]}'), 422, 'inputs%[1%] has shape %[3%], the model takes %[8%]'},
         {post('/predict', '{"inputs": [[[1,2,3,4,5,6,7,8]]]}'), 422, 'inputs%[0%] has shape %[1,8%], the model takes %[8%]'},
         {post('/predict', '{"inputs": []}'), 422, 'no rows'},
         {post('/image', '{"inputs": [[1,2]]}'), 422, 'inputs%[0%]%[0%] is a number, the model takes an array of shape %[4%]'},
         {post('/predict', big), 413, 'at most 16384 %(max_body%)'},
         {post('/predict', cjson.encode{inputs = rows65}), 413, '65 rows, at most 64 %(max_batch%)'},
         {{method = 'GET', path = '/predict'}, 405, 'method GET is not allowed: POST'},
         {{method = 'PUT', path = '/predict', body = row}, 405, 'method PUT'},
      }
      local list = {}
      for i, c in ipairs(cases) do list[i] = c[1] end
      local answers = s.requests(list)
      for i, c in ipairs(cases) do
         local a = answers[i]
         assert.equals(c[2], a.status, ('case %d: %s'):format(i, a.body))
         assert.equals('application/json', a.headers['content-type'])
         local err = cjson.decode(a.body).error
         assert.is_string(err, a.body)
         assert.matches(c[3], err)
      end
      assert.equals('POST', answers[13].headers['allow'])
      -- the workers counted them: the metrics are the whole server's (a shared dict)
      local m = s.requests{{method = 'GET', path = '/metrics'}}[1].body
      assert.matches('fastnn_requests_total{model="model",status="400"} 6\n', m, 1, true)
      assert.matches('fastnn_requests_total{model="model",status="422"} 3\n', m, 1, true)
      assert.matches('fastnn_requests_total{model="model",status="413"} 2\n', m, 1, true)
      assert.matches('fastnn_requests_total{model="model",status="405"} 2\n', m, 1, true)
   end)

   it('batches concurrent requests of a worker into one forward pass, each getting its own rows', function()
      -- 8 requests sent at once to 2 workers: a worker reads several in one event-loop cycle, and its
      -- first gathers them; a round where the client's threads happened to straggle is tried again
      fnn.manual_seed(11)
      local shared, rounds = 0, 0
      while shared == 0 and rounds < 5 do
         rounds = rounds + 1
         local list, xs = {}, {}
         for i = 1, 8 do
            xs[i] = fnn.randn(1, 2, 4):to_table()
            list[i] = post('/image', cjson.encode{inputs = xs[i]})
         end
         local t0 = os.time()
         local answers = s.client('concurrent', {requests = list})
         assert.is_true(os.time() - t0 <= 3)
         for i, a in ipairs(answers) do
            assert.equals(200, a.status, a.body)
            assert.is_true(max_diff(cjson.decode(a.body).outputs, forward(image, xs[i])) <= 1e-5)
            local rows = tonumber(a.headers['x-fastnn-batch-rows'])
            assert.is_true(rows >= 1 and rows <= 4)    -- max_batch
            if rows > 1 then shared = shared + 1 end
         end
      end
      assert.is_true(shared >= 2, 'no two requests shared a forward pass in 5 rounds')
   end)

   it('serves 64 concurrent clients with no failed request, batching them', function()
      fnn.manual_seed(3)
      local cases = {}
      for i = 1, 8 do
         local x = fnn.randn(1 + i % 3, 8):to_table()
         cases[i] = {body = cjson.encode{inputs = x}, expected = {['0'] = forward(mlp, x)}}
      end
      local r = s.client('load', {path = '/predict', clients = 64, seconds = 3, cases = cases})
      assert.same({}, r.failures)
      assert.equals(0, r.failed)
      assert.is_true(r.requests > 64 * 3, 'only ' .. r.requests .. ' requests')
      assert.is_true(r.batch_rows_max > 3, 'no batch held more than one request')
      local m = s.requests{{method = 'GET', path = '/metrics'}}[1].body
      assert.matches('# TYPE fastnn_batch_rows histogram', m, 1, true)
      assert.matches('fastnn_request_duration_seconds_bucket{model="model",le="%+Inf"} %d+', m)
      local count = tonumber(m:match('fastnn_batch_rows_count{model="model"} (%d+)'))
      local served = tonumber(m:match('fastnn_requests_total{model="model",status="200"} (%d+)'))
      assert.is_true(served >= r.requests)
      assert.is_true(count < served, 'as many forward passes as requests: no batching')
   end)

   it('refuses a reload it cannot load, keeping the old weights and saying why', function()
      local r = s.requests{post('/reload_bad', '')}[1]
      assert.equals(500, r.status)
      assert.matches('bad%.fdl', cjson.decode(r.body).error)
      assert.matches('%[5,8%]', cjson.decode(r.body).error)   -- the mismatched shape, named
      local x = {{1, 2, 3, 4, 5, 6, 7, 8}}
      local a = s.requests{post('/predict', cjson.encode{inputs = x})}[1]
      assert.equals('0', a.headers['x-fastnn-generation'])
      assert.is_true(max_diff(cjson.decode(a.body).outputs, forward(mlp, x)) <= 1e-6)
   end)

   it('reloads weights under load with no failed request; then every worker answers with them', function()
      fnn.manual_seed(5)
      local cases = {}
      for i = 1, 8 do
         local x = fnn.randn(i % 2 + 1, 8):to_table()
         cases[i] = {body = cjson.encode{inputs = x}, expected = {['0'] = forward(mlp, x), ['1'] = forward(mlp_next, x)}}
      end
      local r = s.client('load', {path = '/predict', clients = 64, seconds = 3, cases = cases,
                                  reload = {path = '/reload', after = 1.5}})
      assert.equals(200, r.reload.status, r.reload.body)
      assert.equals(1, cjson.decode(r.reload.body).generation)
      assert.same({}, r.failures)
      assert.equals(0, r.failed)
      assert.is_true((r.generations['0'] or 0) > 0 and (r.generations['1'] or 0) > 0)
      -- after the reload: 64 at once (both workers), all on the new weights
      local list, x = {}, {{8, 7, 6, 5, 4, 3, 2, 1}}
      for i = 1, 64 do list[i] = post('/predict', cjson.encode{inputs = x}) end
      local want = forward(mlp_next, x)
      assert.is_true(max_diff(want, forward(mlp, x)) > 1e-3)   -- the two sets of weights differ
      for _, a in ipairs(s.client('concurrent', {requests = list})) do
         assert.equals(200, a.status, a.body)
         assert.equals('1', a.headers['x-fastnn-generation'])
         assert.is_true(max_diff(cjson.decode(a.body).outputs, want) <= 1e-6)
      end
   end)

   it('ends with the workers it started (none crashed and was respawned)', function()
      assert.same(pids, s.workers())
      local log = s.log()
      assert.is_nil(log:find('exited on signal', 1, true), log)
      assert.is_nil(log:find('[alert]', 1, true), log)
   end)
end)

describe('fastnn loaded in nginx\'s master (init_by_lua), then forked into workers', function()
   it('runs in the workers (on one thread each) after the master ran its kernels on a team, and says why', function()
      local s = start('forked', "init_by_lua_block { require('serve.app').master_warmup() }", 'FASTNN_NUM_THREADS=2')
      finally(function() s.stop() end)
      local pids = s.workers()
      local x = {{1, 0, 1, 0, 1, 0, 1, 0}, {0, 1, 0, 1, 0, 1, 0, 1}}
      local list = {}
      for i = 1, 16 do list[i] = post('/predict', cjson.encode{inputs = x}) end
      local want = forward(mlp, x)
      for _, a in ipairs(s.client('concurrent', {requests = list})) do
         assert.equals(200, a.status, a.body)
         assert.is_true(max_diff(cjson.decode(a.body).outputs, want) <= 1e-6)
      end
      assert.equals(1, cjson.decode(s.requests{{method = 'GET', path = '/health'}}[1].body).threads)
      assert.matches('build the model in init_worker_by_lua_block', s.log(), 1, true)
      assert.same(pids, s.workers())
   end)

   it('keeps a pool per worker when the master only loaded fastnn', function()
      local s = start('loaded', "init_by_lua_block { require('fastnn') }", 'FASTNN_NUM_THREADS=2')
      finally(function() s.stop() end)
      local a = s.requests{post('/predict', cjson.encode{inputs = {{1, 2, 3, 4, 5, 6, 7, 8}}})}[1]
      assert.equals(200, a.status, a.body)
      assert.is_nil(s.log():find('init_worker_by_lua_block', 1, true))
   end)
end)

describe('examples/serve/run.lua', function()
   it('trains the MNIST MLP when missing, serves it from nginx with a prefix of its own, and answers as the checkpoint', function()
      find_nginx()
      local out, port = dir .. '/example', free_port()
      local launcher = process.program('fastnn-lua', 'FASTNN_LAUNCHER')
      local text, ok = sh(('%s timeout 300 %s examples/serve/run.lua --quick --detach --out %s --port %d'):format(
         sanitizer_env(), process.quote(launcher), process.quote(out), port))
      local pid_file = out .. '/serve-nginx/nginx.pid'
      finally(function()
         local pid = (process.try_read(pid_file) or ''):match('%d+')
         if pid then os.execute(('kill -QUIT %s; sleep 0.5'):format(pid)) end
      end)
      assert.is_true(ok, text)
      assert.matches('training it with examples/mnist_mlp.lua %-%-quick', text)
      assert.matches('started: nginx master %d+', text)
      assert.is_true(process.exists(out .. '/mnist_mlp.fdl'))
      local serve_app = dofile('examples/serve/handler.lua')
      local model = serve_app.model()
      fnn.load(model, out .. '/mnist_mlp.fdl')
      model:eval()
      fnn.manual_seed(9)
      local x = fnn.rand(3, 784):to_table()
      local answer
      local ask = out .. '/ask.json'
      process.write_file(ask, cjson.encode{port = port, requests = {post('/predict', cjson.encode{inputs = x})}})
      for _ = 1, 100 do   -- until nginx answers
         local a = sh(('python3 %s/spec/serve/client.py requests %s'):format(ROOT, process.quote(ask)))
         local okj, list = pcall(cjson.decode, a)
         if okj and list[1] and list[1].status == 200 then answer = list[1]; break end
         sleep(0.1)
      end
      assert.is_table(answer, 'the example did not answer /predict')
      assert.is_true(max_diff(cjson.decode(answer.body).outputs, forward(model, x)) <= 1e-5)
      assert.equals('', process.try_read(out .. '/serve-nginx/error.log') or '')
   end)
end)
