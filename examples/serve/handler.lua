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
function M.init(weights)
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

function M.predict() return M.batched() end
function M.predict_single() return M.single() end

return M
