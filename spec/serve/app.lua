-- The application spec/serve_spec.lua runs inside a real nginx (and builds its expected answers
-- from): two models and their fastnn.serve handlers, made in each worker (init_worker_by_lua).
--   /predict: an MLP on rows of 8 numbers, batched up to 64 rows for at most 2 ms, metrics and
--             reloads shared by the workers (lua_shared_dict fastnn)
--   /image:   rows of shape [2,4], batches of at most 4 rows gathered for up to 300 ms (this worker's
--             counters only), so that concurrent requests visibly share a forward pass
local fnn = require 'fastnn'
local serve = require 'fastnn.serve'
local nn = fnn.nn

local M = {}

function M.mlp() return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)) end
function M.image_model() return nn.Sequential(nn.Flatten(), nn.Linear(8, 2)) end

-- dir holds mlp.fdl, image.fdl (the starting weights), next.fdl (a reload) and bad.fdl
function M.init(dir)
   M.dir = dir
   local image = M.image_model()
   fnn.load(image, dir .. '/image.fdl')
   M.image = serve.handler{model = image, input_shape = {2, 4}, max_batch = 4, max_wait_ms = 300, name = 'image'}
   local mlp = M.mlp()
   fnn.load(mlp, dir .. '/mlp.fdl')
   -- made last: serve.health, serve.metrics and serve.reload act on it
   M.predict = serve.handler{model = mlp, input_shape = {8}, max_batch = 64, max_wait_ms = 2, max_body = 16384,
                             shared_dict = 'fastnn'}
end

-- init_by_lua (nginx's master, before the fork): fastnn's kernels on a team of threads, so that
-- OpenMP's pool exists when the workers are forked
function M.master_warmup()
   local a = fnn.randn(512, 512)
   return a:matmul(a):sum():item()
end

return M
