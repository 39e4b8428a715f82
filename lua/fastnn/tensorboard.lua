-- fastnn.tensorboard: training logs TensorBoard reads (`tensorboard --logdir runs`), with
-- PyTorch's SummaryWriter calls.
--   local tb = fnn.tensorboard.SummaryWriter('runs/mlp', {flush_secs = 30})
--   tb:add_scalar('loss/train', loss, step)
--   tb:add_scalars('loss', {train = 0.4, val = 0.5}, step)   -- runs runs/mlp/loss_train, loss_val
--   tb:add_histogram('fc1.weight', w, step)
--   tb:add_image('sample', img, step)                        -- [C, H, W] in [0, 1], C 1, 3 or 4
--   tb:add_text('notes', 'lr **1e-3**', step)                -- markdown
--   tb:close()
-- The event files are written in C (core/io/tensorboard.c: protobuf-c, CRC-32C records, PNG through
-- libpng). Events are queued and written when max_queue are queued, every flush_secs, and on
-- flush() and close(): a crash loses at most what was added since the last flush.
local ffi = require 'ffi'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local tensor = require 'fastnn.tensor'
local options = require 'fastnn.options'
local C = tensor.C
local show = options.describe   -- strings quoted, tensors by shape, never an address
local floor, huge = math.floor, math.huge

local M = {}

local OPTS = options.declare('tensorboard.SummaryWriter', {
   {'flush_secs', 'number', 120, 'seconds between the background writes of queued events', min = 0, min_open = true},
   {'max_queue', 'integer', 10, 'events queued before they are written to the file', min = 1},
})

local SummaryWriter = {}
SummaryWriter.__index = SummaryWriter
SummaryWriter.__tostring = function(w)
   return ('tensorboard.SummaryWriter(%s%s)'):format(w.log_dir, w.handle and '' or ', closed')
end

-- the C library's last message without its 'tensorboard: ' prefix, at the user's line
local function c_failed(op, level)
   local msg = ffi.string(C.fnn_last_error()):gsub('^tensorboard: ', '')
   error(('SummaryWriter:%s: %s'):format(op, msg), level + 1)
end

local function open(log_dir, o)
   local out = ffi.new('fnn_tb_writer*[1]')
   if C.fnn_tb_open(out, log_dir, o.flush_secs, o.max_queue) ~= 0 then return nil, ffi.string(C.fnn_last_error()) end
   return ffi.gc(out[0], C.fnn_tb_close)
end

-- SummaryWriter(log_dir, {flush_secs = 120, max_queue = 10}): a new event file in log_dir (made
-- when missing; PyTorch's runs/<date> when log_dir is nil)
function M.SummaryWriter(log_dir, opts, extra)
   if extra ~= nil then too_many('tensorboard.SummaryWriter', 3, extra, 'log_dir, opts') end
   if log_dir == nil then log_dir = 'runs/' .. os.date('%b%d_%H-%M-%S') end
   if type(log_dir) ~= 'string' or log_dir == '' then
      error(('tensorboard.SummaryWriter: log_dir is %s, expected a directory name'):format(show(log_dir)), 2)
   end
   local o = OPTS:check(opts, 2)
   local handle, err = open(log_dir, o)
   if not handle then error('tensorboard.SummaryWriter: ' .. err:gsub('^tensorboard: ', ''), 2) end
   return setmetatable({log_dir = log_dir, handle = handle, opts = o, groups = {}, path = ffi.string(C.fnn_tb_path(handle))},
                       SummaryWriter)
end

-- self is a writer that is still open; errors at the user's line (level 3 from here)
local function live(self, op)
   if getmetatable(self) ~= SummaryWriter then
      error(('SummaryWriter:%s: call it with a colon (writer:%s(...)), got %s as the writer'):format(op, op, show(self)), 3)
   end
   if not self.handle then
      error(('SummaryWriter:%s: the writer of %s is closed'):format(op, self.log_dir), 3)
   end
   return self.handle
end

local function check_tag(op, tag, what)
   if type(tag) ~= 'string' or tag == '' then
      error(('SummaryWriter:%s: %s is %s, expected a non-empty string'):format(op, what or 'tag', show(tag)), 3)
   end
end

-- a whole number TensorBoard's int64 step holds exactly (|step| <= 2^53, where doubles stop counting by 1)
local function check_step(op, step)
   if type(step) ~= 'number' or step ~= step or step == huge or step == -huge or step ~= floor(step) then
      error(('SummaryWriter:%s: step is %s, expected a whole number'):format(op, show(step)), 3)
   end
   if math.abs(step) > 2 ^ 53 then
      error(('SummaryWriter:%s: step is %.17g, expected a whole number within +-2^53'):format(op, step), 3)
   end
   return step
end

-- a number, or a one-element tensor's value
local function scalar_of(op, v, what)
   if tensor.is_tensor(v) then
      if v:numel() ~= 1 then
         error(('SummaryWriter:%s: %s is a tensor %s, expected a number or a one-element tensor'):format(op, what,
               tensor.shape_str(v)), 3)
      end
      return v:item()
   end
   if type(v) ~= 'number' then
      error(('SummaryWriter:%s: %s is %s, expected a number'):format(op, what, show(v)), 3)
   end
   return v
end

local function on_cpu(t)
   if t:device_name() ~= 'cpu' then return t:to('cpu') end
   return t
end

-- add_scalar(tag, value, step): value a number or a one-element tensor
function SummaryWriter:add_scalar(tag, value, step, extra)
   if extra ~= nil then too_many('SummaryWriter:add_scalar', 4, extra, 'tag, value, step') end
   local h = live(self, 'add_scalar')
   check_tag('add_scalar', tag)
   value = scalar_of('add_scalar', value, 'value')
   check_step('add_scalar', step)
   if C.fnn_tb_scalar(h, tag, value, step) ~= 0 then c_failed('add_scalar', 2) end
end

-- add_scalars(main_tag, {key = value, ...}, step): PyTorch's layout, each key a run of its own
-- (the directory <log_dir>/<main_tag with '/' as '_'>_<key>) holding the scalar main_tag, so
-- TensorBoard draws the keys as the curves of one chart
function SummaryWriter:add_scalars(main_tag, values, step, extra)
   if extra ~= nil then too_many('SummaryWriter:add_scalars', 4, extra, 'main_tag, values, step') end
   live(self, 'add_scalars')
   check_tag('add_scalars', main_tag, 'main_tag')
   if type(values) ~= 'table' or tensor.is_tensor(values) or next(values) == nil then
      error(('SummaryWriter:add_scalars: values is %s, expected a table {name = number, ...}'):format(show(values)), 2)
   end
   check_step('add_scalars', step)
   local keys = {}
   for k, v in pairs(values) do
      if type(k) ~= 'string' and type(k) ~= 'number' then
         error(('SummaryWriter:add_scalars: key %s, expected names (strings or numbers)'):format(show(k)), 2)
      end
      keys[#keys + 1] = tostring(k)
      scalar_of('add_scalars', v, ("values['%s']"):format(k))
   end
   table.sort(keys)
   local by_name = {}
   for k, v in pairs(values) do by_name[tostring(k)] = v end
   for _, k in ipairs(keys) do
      local dir = ('%s/%s_%s'):format(self.log_dir, (main_tag:gsub('/', '_')), k)
      local g = self.groups[dir]
      if not g then
         local err
         g, err = open(dir, self.opts)
         if not g then error('SummaryWriter:add_scalars: ' .. err:gsub('^tensorboard: ', ''), 2) end
         self.groups[dir] = g
      end
      local v = by_name[k]
      if tensor.is_tensor(v) then v = v:item() end
      if C.fnn_tb_scalar(g, main_tag, v, step) ~= 0 then c_failed('add_scalars', 2) end
   end
end

-- add_histogram(tag, values, step): values a tensor (any shape) or a Lua array of numbers, all finite;
-- PyTorch's (TensorFlow's) default buckets
function SummaryWriter:add_histogram(tag, values, step, extra)
   if extra ~= nil then too_many('SummaryWriter:add_histogram', 4, extra, 'tag, values, step') end
   local h = live(self, 'add_histogram')
   check_tag('add_histogram', tag)
   local n, buf
   if tensor.is_tensor(values) then
      values = on_cpu(values)
      n = values:numel()
      if n == 0 then error(('SummaryWriter:add_histogram: the tensor %s is empty'):format(tensor.shape_str(values)), 2) end
      buf = ffi.new('double[?]', n)
      if C.fnn_copy_to_doubles(values, buf, n) ~= 0 then c_failed('add_histogram', 2) end
   elseif type(values) == 'table' and #values > 0 then
      n = #values
      buf = ffi.new('double[?]', n)
      for i = 1, n do
         if type(values[i]) ~= 'number' then
            error(('SummaryWriter:add_histogram: values[%d] is %s, expected a number'):format(i, show(values[i])), 2)
         end
         buf[i - 1] = values[i]
      end
   else
      error(('SummaryWriter:add_histogram: values is %s, expected a tensor or a non-empty array of numbers')
            :format(show(values)), 2)
   end
   check_step('add_histogram', step)
   if C.fnn_tb_histogram(h, tag, buf, n, step) ~= 0 then c_failed('add_histogram', 2) end
end

-- add_image(tag, img, step): img [C, H, W] in [0, 1] (C 1 grey, 3 RGB, 4 RGBA), stored as PNG
function SummaryWriter:add_image(tag, img, step, extra)
   if extra ~= nil then too_many('SummaryWriter:add_image', 4, extra, 'tag, img, step') end
   local h = live(self, 'add_image')
   check_tag('add_image', tag)
   if not tensor.is_tensor(img) then
      error(('SummaryWriter:add_image: img is %s, expected a tensor [C,H,W] in [0, 1]'):format(show(img)), 2)
   end
   local s = img:shape()
   if #s ~= 3 or not (s[1] == 1 or s[1] == 3 or s[1] == 4) or s[2] < 1 or s[3] < 1 then
      error(('SummaryWriter:add_image: img is %s, expected [C,H,W] with C 1 (grey), 3 (RGB) or 4 (RGBA), H and W >= 1')
            :format(tensor.shape_str(img)), 2)
   end
   check_step('add_image', step)
   img = on_cpu(img)
   local n = img:numel()
   local buf = ffi.new('float[?]', n)
   if C.fnn_copy_to_floats(img, buf, n) ~= 0 then c_failed('add_image', 2) end
   if C.fnn_tb_image(h, tag, buf, s[1], s[2], s[3], step) ~= 0 then c_failed('add_image', 2) end
end

-- add_text(tag, text, step): markdown for TensorBoard's text plugin
function SummaryWriter:add_text(tag, text, step, extra)
   if extra ~= nil then too_many('SummaryWriter:add_text', 4, extra, 'tag, text, step') end
   local h = live(self, 'add_text')
   check_tag('add_text', tag)
   if type(text) ~= 'string' then
      error(('SummaryWriter:add_text: text is %s, expected a string'):format(show(text)), 2)
   end
   check_step('add_text', step)
   if C.fnn_tb_text(h, tag, text, #text, step) ~= 0 then c_failed('add_text', 2) end
end

-- every queued event to the files (this writer's and add_scalars' runs), synced to disk
function SummaryWriter:flush(extra)
   if extra ~= nil then too_many('SummaryWriter:flush', 1, extra, '') end
   local h = live(self, 'flush')
   if C.fnn_tb_flush(h) ~= 0 then c_failed('flush', 2) end
   for _, g in pairs(self.groups) do
      if C.fnn_tb_flush(g) ~= 0 then c_failed('flush', 2) end
   end
end

-- flush and close the files; a closed writer refuses further calls (closing twice is harmless)
function SummaryWriter:close(extra)
   if extra ~= nil then too_many('SummaryWriter:close', 1, extra, '') end
   if getmetatable(self) ~= SummaryWriter then
      error(('SummaryWriter:close: call it with a colon (writer:close()), got %s as the writer'):format(show(self)), 2)
   end
   if not self.handle then return end
   local handles = {self.handle}
   for _, g in pairs(self.groups) do handles[#handles + 1] = g end
   self.handle, self.groups = nil, {}
   local failed
   for _, h in ipairs(handles) do
      ffi.gc(h, nil)
      if C.fnn_tb_close(h) ~= 0 and not failed then failed = ffi.string(C.fnn_last_error()) end
   end
   if failed then error('SummaryWriter:close: ' .. failed:gsub('^tensorboard: ', ''), 2) end
end

function SummaryWriter:get_logdir(extra)
   if extra ~= nil then too_many('SummaryWriter:get_logdir', 1, extra, '') end
   return self.log_dir
end

M.crc32c = function(s, extra)
   if extra ~= nil then too_many('tensorboard.crc32c', 2, extra, 's') end
   if type(s) ~= 'string' then error(('tensorboard.crc32c: expected a string, got %s'):format(show(s)), 2) end
   return tonumber(C.fnn_crc32c(s, #s))
end
M.masked_crc32c = function(s, extra)
   if extra ~= nil then too_many('tensorboard.masked_crc32c', 2, extra, 's') end
   if type(s) ~= 'string' then error(('tensorboard.masked_crc32c: expected a string, got %s'):format(show(s)), 2) end
   return tonumber(C.fnn_crc32c_masked(s, #s))
end

return M
