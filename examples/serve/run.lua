-- examples/serve/run.lua: serves the MLP that examples/mnist_mlp.lua trains, from nginx with its
-- Lua module (Debian: apt-get install nginx-light libnginx-mod-http-lua lua-cjson). nginx runs with
-- a prefix directory of its own under --out (configuration, pid, logs): no root, no system
-- configuration read or touched. The model is trained first when its checkpoint is missing.
--   fastnn-lua examples/serve/run.lua                 # http://127.0.0.1:8080, Ctrl-C stops it
--   fastnn-lua examples/serve/run.lua --detach        # in the background; prints how to stop it
--   curl -s -d '{"inputs": [[0, 0.5, ... 784 numbers]]}' http://127.0.0.1:8080/predict
--   curl -s http://127.0.0.1:8080/metrics             # Prometheus text; /health: JSON
--   curl -s -X POST http://127.0.0.1:8080/reload      # the checkpoint again, after a new training run
-- --quick trains the model with mnist_mlp's --quick (a few seconds) when it has to train.
local here = arg[0]:match('^(.*)/') or '.'
package.path = here .. '/../?.lua;' .. package.path
local cli = require 'common.cli'

local opts = cli.parse{
   name = 'serve/run', about = 'Serve the MNIST MLP from nginx (fastnn.serve): dynamic batching, metrics, reload.',
   options = {
      {'port', 8080, 'the loopback port to listen on'},
      {'workers', 2, 'nginx worker processes'},
      {'model', '', 'the checkpoint to serve (default <out>/mnist_mlp.fdl, trained when missing)', 'FILE'},
      {'detach', false, 'start nginx in the background and return'},
   },
}

local function sh(cmd)
   local p = io.popen(cmd .. ' 2>&1')
   local out = p:read('*a')
   local ok = p:close()
   return out, ok == true or ok == 0
end
local function quote(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end
local function exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() end
   return f ~= nil
end
local function absolute(path)
   if path:sub(1, 1) == '/' then return path end
   return io.popen('pwd'):read('*l') .. '/' .. path
end
local function fail(msg)
   io.stderr:write('serve/run: ', msg, '\n')
   os.exit(1)
end

-- nginx and its Lua module
local nginx = sh('command -v nginx || ls /usr/sbin/nginx'):match('(%S+)')
if not nginx or not exists(nginx) then
   fail('nginx is not installed: apt-get install nginx-light libnginx-mod-http-lua lua-cjson')
end
local modules = sh(nginx .. ' -V'):match('%-%-modules%-path=(%S+)') or '/usr/lib/nginx/modules'
if not exists(modules .. '/ngx_http_lua_module.so') then
   fail(('%s/ngx_http_lua_module.so is missing: apt-get install libnginx-mod-http-lua'):format(modules))
end

-- the checkpoint, trained by examples/mnist_mlp.lua when missing
os.execute('mkdir -p ' .. quote(opts.out))
local model = absolute(opts.model ~= '' and opts.model or opts.out .. '/mnist_mlp.fdl')
if not exists(model) then
   print(('no checkpoint at %s: training it with examples/mnist_mlp.lua%s'):format(model, opts.quick and ' --quick' or ''))
   local launcher = arg[-1] or 'fastnn-lua'
   local cmd = ('%s %s/../mnist_mlp.lua --out %s%s'):format(quote(launcher), quote(here), quote(model:match('^(.*)/')),
                                                          opts.quick and ' --quick' or '')
   if not os.execute(cmd) or not exists(model) then fail('training failed: ' .. cmd) end
end

-- the configuration: examples/serve/nginx.conf with its ${...} names filled in
local lua_dir = assert(package.searchpath('fastnn.serve', package.path), 'fastnn.serve not on package.path')
   :match('^(.*)/fastnn/serve%.lua$')
local lib = os.getenv('FASTNN_LIB')
if not lib or lib == '' then lib = rawget(_G, 'FASTNN_LIB_PATH') or '' end
-- run by root, nginx's workers would be nobody, who may not read the checkpoint: they stay root
local root = sh('id -u'):match('^0%s') ~= nil
local values = {RUN_AS = root and 'user root;  # run.lua was started by root' or '', MODULES = modules,
                WORKERS = opts.workers, LIB = lib, LUA = absolute(lua_dir), HERE = absolute(here), MODEL = model,
                PORT = opts.port}
local f = assert(io.open(here .. '/nginx.conf'))
local conf = f:read('*a'):gsub('%${([%u_]+)}', function(k) return tostring(assert(values[k], k)) end)
f:close()
local prefix = absolute(opts.out .. '/serve-nginx')
os.execute('mkdir -p ' .. quote(prefix))
f = assert(io.open(prefix .. '/nginx.conf', 'w'))
f:write(conf)
f:close()
local start = ('%s -p %s -c %s/nginx.conf'):format(nginx, quote(prefix), quote(prefix))

print(('serving %s on http://127.0.0.1:%d (%d workers; nginx prefix %s)'):format(model, opts.port, opts.workers, prefix))
print(('  curl -s http://127.0.0.1:%d/health; POST {"inputs": [[784 numbers]]} to /predict'):format(opts.port))
if opts.detach then
   local out, ok = sh(start)
   if not ok then fail('nginx did not start: ' .. out .. (sh('cat ' .. quote(prefix .. '/error.log')))) end
   print(('started: nginx master %s; stop it with: kill -QUIT $(cat %s/nginx.pid)'):format(
      (sh('cat ' .. quote(prefix .. '/nginx.pid')):match('%d+')), prefix))
else
   print('Ctrl-C stops it')
   os.execute(start .. " -g 'daemon off;'")
end
