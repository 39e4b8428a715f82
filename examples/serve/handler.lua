-- examples/serve/handler.lua: the application examples/serve/nginx.conf runs in each nginx worker:
-- the MLP of examples/mnist_mlp.lua (784-256-256-10) with the weights that example saved, behind
-- fastnn.serve's handler (dynamic batching: up to 64 rows per forward pass, waiting at most 2 ms).
local fnn = require 'fastnn'
local serve = require 'fastnn.serve'
local nn = fnn.nn

local M = {}

-- the architecture of examples/mnist_mlp.lua (its checkpoint holds only the numbers)
function M.model()
   return nn.Sequential(
      nn.Flatten(),
      nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2),
      nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.2),
      nn.Linear(256, 10))
end

-- init_worker_by_lua_block: the model and its handlers, in this worker
-- (a training checkpoint: fnn.load takes its weights and leaves the optimizer's state)
local function init(weights)
   local function load()
      local model = M.model()
      fnn.load(model, weights)
      return model
   end
   -- one forward pass per request (max_wait_ms = 0), for bench/serve.sh's comparison; a model of its
   -- own, so that a reload (of the batched handler's) leaves it as it is
   M.single = serve.handler{model = load(), input_shape = {784}, max_wait_ms = 0, name = 'single',
                            shared_dict = 'fastnn'}
   -- made last: serve.health, serve.metrics and serve.reload act on it
   M.batched = serve.handler{model = load(), input_shape = {784}, max_batch = 64, max_wait_ms = 2,
                             shared_dict = 'fastnn'}
end

-- a worker whose model did not load answers 503 saying why (and logs it), rather than a bare 500
function M.init(weights)
   local ok, err = pcall(init, weights)
   if not ok then
      M.failed = tostring(err)
      ngx.log(ngx.ERR, 'examples/serve: no model in this worker: ', M.failed)
   end
end

local function unavailable()
   ngx.status = 503
   ngx.header['Content-Type'] = 'application/json'
   ngx.print(require('cjson').encode({error = 'no model in this worker: ' .. (M.failed or 'not initialized')}))
   return ngx.exit(503)
end

function M.predict() if M.batched then return M.batched() end return unavailable() end
function M.predict_single() if M.single then return M.single() end return unavailable() end

return M
