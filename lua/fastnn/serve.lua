-- fastnn.serve: a model behind nginx's Lua module (Debian's libnginx-mod-http-lua, OpenResty's
-- engine). In init_worker_by_lua_block (after nginx forks its workers, so each has its own pool):
--   local serve = require 'fastnn.serve'
--   predict = serve.handler{model = m, input_shape = {784}, max_batch = 64, max_wait_ms = 2,
--                           shared_dict = 'fastnn'}
-- and the locations: content_by_lua_block { predict() }, { serve.health() }, { serve.metrics() };
-- serve.reload(path) swaps in new weights. examples/serve/ is a complete server.
-- POST {"inputs": [[...], ...]} -> {"outputs": [[...], ...]}; a refusal is {"error": "..."} with 400
-- (not JSON, wrong types), 405 (not POST), 413 (too large), 422 (wrong shape) or 500 (the model
-- failed; the worker lives on).
-- Dynamic batching: the first request of a batch gathers the requests its worker reads meanwhile
-- (yielding to nginx's event loop while each cycle brings more, for at most max_wait_ms: no polling
-- of an idle worker), runs them all as one forward pass of at most max_batch rows and wakes each
-- (an ngx.semaphore), which takes its own rows back.
-- JSON through lua-cjson (Debian's lua-cjson, OpenResty's own), never by hand.
local fnn = require 'fastnn'
local options = require 'fastnn.options'
local dims_str = require('fastnn.tensor').dims_str

local M = {}

local OPTS = options.declare('serve.handler', {
   {'model', 'table', nil, 'the module answering (required); put in evaluation mode'},
   {'input_shape', 'table', nil, 'the shape of one input row without the batch dim, such as {784} (required)',
    check = function(v)
       if #v == 0 then return 'expected at least one size' end
       for i = 1, #v do
          local s = v[i]
          if type(s) ~= 'number' or s < 1 or s ~= math.floor(s) then
             return ('size %d is not a positive integer'):format(i)
          end
       end
    end},
   {'max_batch', 'integer', 64, 'rows in one forward pass; a request with more is refused (413)', min = 1},
   {'max_wait_ms', 'number', 2, "how long a batch's first request may gather others (0: one forward per request)",
    min = 0},
   {'max_body', 'integer', nil, 'largest request body in bytes (413 above it)', min = 1,
    default_doc = 'max_batch x the row\'s numbers x 32 + 1024'},
   {'shared_dict', 'string', nil, 'a lua_shared_dict: metrics count for the whole server and serve.reload reaches '
    .. 'every worker (without one: this worker only)'},
   {'name', 'string', 'model', 'the model label of metrics and health'},
   {'threads', 'integer', 1, 'kernel threads per worker (fnn.set_num_threads): the workers are the parallelism',
    min = 1},
})

local cjson_ok, cjson_or_err = pcall(require, 'cjson')
local json                       -- a private lua-cjson instance: the host's global settings stay its own
if cjson_ok then
   json = cjson_or_err.new()
   json.decode_invalid_numbers(false)   -- NaN, Infinity, hex: refused
   json.decode_max_depth(16)
   json.encode_number_precision(14)
   json.encode_invalid_numbers(false)
end

local function need(what)
   if not cjson_ok then
      error(('%s: needs lua-cjson (Debian: apt-get install lua-cjson): %s'):format(what, tostring(cjson_or_err)), 3)
   end
   if not rawget(_G, 'ngx') then
      error(('%s: runs inside nginx\'s Lua module (libnginx-mod-http-lua, or OpenResty)'):format(what), 3)
   end
end

-- ---------------------------------------------------------------------------
-- counters: a lua_shared_dict (the whole server) or a table (this worker)

local function store_of(dict_name, name)
   local pre = name .. ':'         -- handlers sharing a dict count apart
   if dict_name then
      local dict = ngx.shared[dict_name]
      if not dict then
         error(("serve.handler: shared_dict '%s' is not declared (lua_shared_dict %s 1m; in nginx.conf's http block)")
               :format(dict_name, dict_name), 3)
      end
      return {
         incr = function(k, n) dict:incr(pre .. k, n, 0) end,
         get = function(k) return dict:get(pre .. k) end,
         dict = dict, whole_server = true,
      }
   end
   local t = {}
   return {
      incr = function(k, n) t[k] = (t[k] or 0) + n end,
      get = function(k) return t[k] end,
   }
end

local BATCH_BUCKETS = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
local LATENCY_BUCKETS = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
local STATUSES = {200, 400, 405, 413, 422, 500, 503}

local function observe(store, prefix, buckets, v)
   for _, le in ipairs(buckets) do
      if v <= le then store.incr(prefix .. le, 1); break end
   end
   store.incr(prefix .. 'sum', v)
   store.incr(prefix .. 'count', 1)
end

-- ---------------------------------------------------------------------------
-- a request's rows: checked against input_shape

-- the shape of a decoded JSON array, read along first elements (for a 422's message)
local shape_of = require('fastnn.tensor').nested_shape

-- nil when row (a decoded JSON array) holds numbers in input_shape; else status, message
local function check_row(row, where, want, level)
   level = level or 1
   if type(row) ~= 'table' then
      if type(row) == 'number' then
         local rest = {}
         for i = level, #want do rest[#rest + 1] = want[i] end
         return 422, ('%s is a number, the model takes an array of shape %s'):format(where, dims_str(rest))
      end
      return 400, ('%s is %s, expected an array'):format(where, row == json.null and 'null' or 'a ' .. type(row))
   end
   local n = #row
   if n ~= want[level] then
      if row[1] == nil and next(row) ~= nil then return 400, where .. ' is a JSON object, expected an array' end
      local got = shape_of(row)
      local rest = {}
      for i = level, #want do rest[#rest + 1] = want[i] end
      return 422, ('%s has shape %s, the model takes %s'):format(where, dims_str(got), dims_str(rest))
   end
   if level == #want then
      for i = 1, n do
         local x = row[i]
         if type(x) ~= 'number' then
            return 400, ('%s[%d] is %s, expected a number'):format(where, i - 1,
                                                               x == json.null and 'null' or 'a ' .. type(x))
         end
         if x - x ~= 0 then return 400, ('%s[%d] is not a finite number'):format(where, i - 1) end
      end
      return nil
   end
   for i = 1, n do
      local status, msg = check_row(row[i], ('%s[%d]'):format(where, i - 1), want, level + 1)
      if status then return status, msg end
   end
   return nil
end

-- ---------------------------------------------------------------------------
-- the handler

local Handler = {}
Handler.__index = Handler

local default   -- the handler serve.health/metrics/reload act on: the last one made in this process
local made = {}  -- every handler made in this process, by name (serve.metrics shows them all)
local made_order = {}

function M.handler(opts)
   local o = OPTS:check(opts, 2)
   if o.model == nil or type(o.model.forward) ~= 'function' then
      error(('serve.handler: model is %s, expected a module (with forward)'):format(options.describe(o.model)), 2)
   end
   if o.input_shape == nil then error('serve.handler: input_shape is missing, expected a table such as {784}', 2) end
   local row_numbers = 1
   for _, s in ipairs(o.input_shape) do row_numbers = row_numbers * s end
   local h = setmetatable({
      model = o.model, input_shape = {unpack(o.input_shape)}, max_batch = o.max_batch,
      max_wait = o.max_wait_ms / 1000, max_body = o.max_body or o.max_batch * row_numbers * 32 + 1024,
      shared_dict = o.shared_dict, name = o.name, threads = o.threads,
      generation = 0, seen = nil, open = nil, started = false,
   }, Handler)
   o.model:eval()
   default = h
   if not made[h.name] then made_order[#made_order + 1] = h.name end
   made[h.name] = h
   return h
end

-- once per process, at its first request: the worker's own settings (after nginx's fork)
function Handler:start()
   self.started = true
   self.store = store_of(self.shared_dict, self.name)
   self.pid = ngx.worker.pid()
   if fnn.threads_forked() then
      ngx.log(ngx.WARN, 'fastnn.serve: this worker was forked after the master ran fastnn\'s kernels on ',
              'several threads (a forward pass in init_by_lua?); libgomp cannot rebuild its pool after a fork, ',
              'so the worker runs on one thread: build the model in init_worker_by_lua_block instead')
   elseif fnn.get_num_threads() ~= self.threads then
      fnn.set_num_threads(self.threads)
   end
   self:follow_reload()
end

-- status and the encoded JSON body; generation: the weights that answered
function Handler:respond(status, body, started_at, generation)
   ngx.status = status
   ngx.header['Content-Type'] = 'application/json'
   if status == 405 then ngx.header['Allow'] = 'POST' end
   ngx.header['X-Fastnn-Generation'] = generation or self.generation
   ngx.print(body)
   local store = self.store
   store.incr('requests:' .. status, 1)
   ngx.update_time()
   observe(store, 'latency:', LATENCY_BUCKETS, ngx.now() - started_at)
   return ngx.exit(status == 200 and ngx.HTTP_OK or status)
end

-- a refusal: status and {"error": message}
function Handler:refuse(status, message, started_at)
   return self:respond(status, json.encode({error = message}), started_at)
end

-- the request body, or nil, status, message
function Handler:body()
   local declared = tonumber(ngx.var.http_content_length)
   if declared and declared > self.max_body then
      return nil, 413, ('the body is %d bytes, at most %d (max_body)'):format(declared, self.max_body)
   end
   ngx.req.read_body()
   local body = ngx.req.get_body_data()
   if body == nil then
      local file = ngx.req.get_body_file()   -- past client_body_buffer_size nginx keeps it in a file
      if file then
         local f = io.open(file, 'rb')
         body = f and f:read(self.max_body + 1)
         if f then f:close() end
      end
   end
   if body == nil or body == '' then
      return nil, 400, 'the body is empty, expected JSON {"inputs": [[...], ...]}'
   end
   if #body > self.max_body then
      return nil, 413, ('the body is more than %d bytes (max_body)'):format(self.max_body)
   end
   return body
end

-- the rows of a request, or nil, status, message
function Handler:rows(body)
   local ok, doc = pcall(json.decode, body)
   if not ok then return nil, 400, 'the body is not JSON: ' .. tostring(doc):gsub('^.-:%d+: ', '') end
   if type(doc) ~= 'table' or (doc[1] ~= nil) then
      return nil, 400, 'the body is not a JSON object, expected {"inputs": [[...], ...]}'
   end
   local inputs = doc.inputs
   if inputs == nil then
      return nil, 400, 'the body has no "inputs", expected {"inputs": [[...], ...]}'
   end
   if type(inputs) ~= 'table' or (inputs[1] == nil and next(inputs) ~= nil) then
      return nil, 400, ('"inputs" is %s, expected an array of rows'):format(
         type(inputs) == 'table' and 'an object' or inputs == json.null and 'null' or 'a ' .. type(inputs))
   end
   local n = #inputs
   if n == 0 then return nil, 422, '"inputs" holds no rows' end
   if n > self.max_batch then
      return nil, 413, ('"inputs" has %d rows, at most %d (max_batch)'):format(n, self.max_batch)
   end
   local want = self.input_shape
   for i = 1, n do
      local status, msg = check_row(inputs[i], ('inputs[%d]'):format(i - 1), want)
      if status then
         if status == 422 then msg = msg .. (' (inputs %s)'):format(dims_str({n, unpack(want)})) end
         return nil, status, msg
      end
   end
   return inputs
end

-- the newest weights another worker's serve.reload published (shared_dict), loaded between batches
function Handler:follow_reload()
   local dict = self.store.dict
   if not dict then return end
   local v = dict:get('reload:' .. self.name)
   if v == nil or v == self.seen then return end
   self.seen = v
   local gen, path = v:match('^(%d+)\n(.*)$')
   gen = tonumber(gen)
   if gen <= self.generation then return end
   local ok, err = fnn.try_load(self.model, path)
   if ok == nil then
      self.store.incr('reloads:failed', 1)
      ngx.log(ngx.ERR, 'fastnn.serve: worker ', self.pid, ' keeps generation ', self.generation,
              ': cannot load ', path, ': ', err)
      return
   end
   self.generation = gen
end

local function forward(model, x) return model:forward(x) end

-- one forward pass over the rows of every request in the batch; each gets its rows back
function Handler:run(batch)
   self:follow_reload()
   local rows, reqs = {}, batch.reqs
   for _, r in ipairs(reqs) do
      for i = 1, #r.inputs do rows[#rows + 1] = r.inputs[i] end
   end
   local ok, y = pcall(function()
      local out = fnn.no_grad(forward, self.model, fnn.tensor(rows))
      if not fnn.is_tensor(out) then error(('the model returned a %s, expected one tensor'):format(type(out)), 0) end
      if out.ndim < 1 or out:size(1) ~= #rows then
         error(('the model returned %s for %d rows'):format(fnn.shape_str(out), #rows), 0)
      end
      return out:to_table()
   end)
   batch.generation = self.generation
   if not ok then
      batch.err = 'the model failed: ' .. tostring(y)
      ngx.log(ngx.ERR, 'fastnn.serve: ', batch.err)
      return
   end
   local at = 0
   for _, r in ipairs(reqs) do
      local out = {}
      for i = 1, #r.inputs do out[i] = y[at + i] end
      at = at + #r.inputs
      r.outputs = out
   end
   observe(self.store, 'batch:', BATCH_BUCKETS, #rows)
end

-- the leader's gathering: it yields to nginx's event loop for one cycle (an ngx.timer due at once
-- posts its semaphore: the next cycle reads the sockets that are ready and runs their handlers,
-- which join the batch, then the timer) while each cycle brings new rows, the batch has room and
-- max_wait has not passed. A cycle that brings none ends it: the worker would only sit idle (under
-- a closed loop of clients every one of them is already waiting), and a lone request is not
-- delayed at all, nor is the only connection's. (Not ngx.sleep(0): without OpenResty's patch to
-- nginx it logs a warning each call.)
-- max_wait_ms = 0: no gathering.
local semaphore   -- ngx.semaphore, required at the first request (outside nginx it does not load)
local function wake(_, sema) sema:post(1) end
function Handler:gather(batch, started_at)
   if self.max_wait <= 0 then return end
   -- a server with one client connection (nginx's stub_status counts them) has no one to gather
   local active = tonumber(ngx.var.connections_active)
   if active and active <= 1 then return end
   local deadline = started_at + self.max_wait
   local cycle = semaphore.new(0)
   while self.open == batch do
      local rows = batch.rows
      if not ngx.timer.at(0, wake, cycle) then return end   -- no timer left (worker shutting down): run now
      cycle:wait(self.max_wait)
      if self.open ~= batch or batch.rows == rows then return end
      ngx.update_time()
      if ngx.now() >= deadline then return end
   end
end

local WAIT_LIMIT = 60   -- seconds a request waits for its batch's pass before a 503 (never, unless wedged)

-- content_by_lua: answer one request
function Handler:__call()
   need('serve.handler')
   local started_at = ngx.req.start_time()
   if not self.started then self:start() end
   local method = ngx.req.get_method()
   if method ~= 'POST' then
      return self:refuse(405, ('method %s is not allowed: POST a JSON body {"inputs": [[...], ...]}'):format(method),
                          started_at)
   end
   local body, status, msg = self:body()
   if not body then return self:refuse(status, msg, started_at) end
   local inputs
   inputs, status, msg = self:rows(body)
   if not inputs then return self:refuse(status, msg, started_at) end

   semaphore = semaphore or require 'ngx.semaphore'
   local req, n = {inputs = inputs}, #inputs
   local batch = self.open
   if batch and batch.rows + n > self.max_batch then   -- no room: that batch closes, this one opens
      self.open = nil
      batch = nil
   end
   local leader = batch == nil
   if leader then
      batch = {reqs = {}, rows = 0, done = semaphore.new(0)}
      self.open = batch
   end
   batch.reqs[#batch.reqs + 1] = req
   batch.rows = batch.rows + n
   if batch.rows >= self.max_batch and self.open == batch then self.open = nil end   -- full: closed
   if leader then   -- whatever happens, the batch's other requests are woken
      local ok, err = pcall(self.gather, self, batch, started_at)
      if self.open == batch then self.open = nil end
      if ok then ok, err = pcall(self.run, self, batch) end
      if not ok then batch.err = 'the batch failed: ' .. tostring(err) end
      if #batch.reqs > 1 then batch.done:post(#batch.reqs - 1) end
   else
      local ok = batch.done:wait(WAIT_LIMIT)
      if not ok then return self:refuse(503, ('the batch did not run within %d s'):format(WAIT_LIMIT), started_at) end
   end
   if batch.err then return self:refuse(500, batch.err, started_at) end
   ngx.header['X-Fastnn-Batch-Rows'] = batch.rows
   return self:respond(200, json.encode({outputs = req.outputs}), started_at, batch.generation)
end

-- serve.reload(path): the weights of path, read and checked beside the old ones (fnn.try_load:
-- a refused file changes nothing), then in place between two batches: a forward pass runs whole
-- on the weights it started with (the worker's event loop runs one thing at a time). With a
-- shared_dict every worker loads them before its next batch. true, generation; or nil, why.
function M.reload(path, h)
   h = h or default
   if h == nil then return nil, 'serve.reload: no serve.handler made in this worker' end
   if type(path) ~= 'string' or path == '' then
      return nil, ('serve.reload: path is %s, expected a file name'):format(options.describe(path))
   end
   if not h.started and rawget(_G, 'ngx') then h:start() end
   local ok, err = fnn.try_load(h.model, path)
   if ok == nil then
      if h.store then h.store.incr('reloads:failed', 1) end
      return nil, err
   end
   if h.store and h.store.dict then
      local gen = h.store.dict:incr('generation:' .. h.name, 1, 0)
      h.store.dict:set('reload:' .. h.name, gen .. '\n' .. path)
      h.generation = gen
      h.seen = gen .. '\n' .. path
   else
      h.generation = h.generation + 1
   end
   if h.store then h.store.incr('reloads:ok', 1) end
   return true, h.generation
end

-- content_by_lua: 200 and what this worker serves, or 503 when it has no handler yet
function M.health(h)
   need('serve.health')
   h = h or default
   ngx.header['Content-Type'] = 'application/json'
   if h == nil then
      ngx.status = 503
      ngx.print(json.encode({status = 'no model', error = 'no serve.handler made in this worker'}))
      return ngx.exit(503)
   end
   if not h.started then h:start() end
   ngx.print(json.encode({status = 'ok', model = h.name, generation = h.generation, worker = h.pid,
                          input_shape = h.input_shape, max_batch = h.max_batch,
                          threads = fnn.get_num_threads()}))
   return ngx.exit(ngx.HTTP_OK)
end

-- the Prometheus text exposition of h's counters (of every handler of this worker when h is nil);
-- each metric family once, a line per handler (its model label)
function M.metrics_text(h)
   local hs = {}
   if h then hs[1] = h else for i, name in ipairs(made_order) do hs[i] = made[name] end end
   if #hs == 0 then return '# no serve.handler made in this worker\n' end
   local out = {}
   local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
   local function family(name, kind, help)
      add('# HELP %s %s', name, help)
      add('# TYPE %s %s', name, kind)
   end
   for _, x in ipairs(hs) do
      if not x.started then x:start() end
      if not x.store.whole_server then
         add('# model "%s" counts worker %d only: give serve.handler a shared_dict to count the whole server',
             x.name, x.pid)
      end
   end
   local function label(x) return ('model="%s"'):format(x.name) end
   family('fastnn_requests_total', 'counter', 'Requests answered, by HTTP status.')
   for _, x in ipairs(hs) do
      for _, status in ipairs(STATUSES) do
         add('fastnn_requests_total{%s,status="%d"} %d', label(x), status, x.store.get('requests:' .. status) or 0)
      end
   end
   family('fastnn_request_errors_total', 'counter', 'Requests refused or failed (status 400 and above).')
   for _, x in ipairs(hs) do
      local errors = 0
      for _, status in ipairs(STATUSES) do
         if status >= 400 then errors = errors + (x.store.get('requests:' .. status) or 0) end
      end
      add('fastnn_request_errors_total{%s} %d', label(x), errors)
   end
   local function histogram(name, help, prefix, buckets)
      family(name, 'histogram', help)
      for _, x in ipairs(hs) do
         local s, cum = x.store, 0
         for _, le in ipairs(buckets) do
            cum = cum + (s.get(prefix .. le) or 0)
            add('%s_bucket{%s,le="%s"} %d', name, label(x), tostring(le), cum)
         end
         add('%s_bucket{%s,le="+Inf"} %d', name, label(x), s.get(prefix .. 'count') or 0)
         add('%s_sum{%s} %.9g', name, label(x), s.get(prefix .. 'sum') or 0)
         add('%s_count{%s} %d', name, label(x), s.get(prefix .. 'count') or 0)
      end
   end
   histogram('fastnn_batch_rows', 'Rows in each forward pass (dynamic batching).', 'batch:', BATCH_BUCKETS)
   histogram('fastnn_request_duration_seconds', 'Time from the request read to the answer.', 'latency:',
             LATENCY_BUCKETS)
   family('fastnn_reloads_total', 'counter', 'serve.reload calls and shared reloads, by result.')
   for _, x in ipairs(hs) do
      add('fastnn_reloads_total{%s,result="ok"} %d', label(x), x.store.get('reloads:ok') or 0)
      add('fastnn_reloads_total{%s,result="failed"} %d', label(x), x.store.get('reloads:failed') or 0)
   end
   family('fastnn_model_generation', 'gauge', 'The weights this worker answers with (0: as started; +1 per reload).')
   for _, x in ipairs(hs) do add('fastnn_model_generation{%s} %d', label(x), x.generation) end
   return table.concat(out, '\n') .. '\n'
end
-- content_by_lua: the metrics page
function M.metrics(h)
   need('serve.metrics')
   ngx.header['Content-Type'] = 'text/plain; version=0.0.4'
   ngx.print(M.metrics_text(h))
   return ngx.exit(ngx.HTTP_OK)
end

-- content_by_lua: a reload location; the path comes from the caller (never from the request
-- unless the location's own code chooses so). 200 {"generation": n} or 500 {"error": why}.
function M.reload_location(path, h)
   need('serve.reload_location')
   local ok, gen = M.reload(path, h)
   ngx.header['Content-Type'] = 'application/json'
   ngx.status = ok and 200 or 500
   ngx.print(json.encode(ok and {generation = gen} or {error = gen}))
   return ngx.exit(ok and ngx.HTTP_OK or 500)
end

return M
