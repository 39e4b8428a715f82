-- data.transforms: picture transforms (torchvision's names) that run in C (core/io/transforms.c).
--   local T = data.transforms
--   local tf = T.Compose{T.RandomResizedCrop(224), T.RandomHorizontalFlip(0.5),
--                        T.Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})}
--   local y = tf(x)                   -- x: float32 [C, H, W] in [0, 1]; a new picture
--   data.ImageFolder(root, {transform = tf})
-- A transform is a list of steps, run in order by one C call; Compose joins lists. Random steps
-- (RandomResizedCrop, RandomHorizontalFlip, ColorJitter) draw from a splitmix64 state: the
-- loader's seeded stream when a DataLoader batches an ImageFolder (so seed(n) repeats the
-- batches), fastnn's random source when called directly (reproducible under fnn.manual_seed), or
-- tf(x, seed) with a number.
--   Resize(size)          the shorter side to size, the aspect kept; Resize{h, w} exactly
--                         (bilinear, antialiased when shrinking)
--   CenterCrop(size)      size or {h, w}; the corner at (H - h) / 2 rounded half to even, as torchvision
--   RandomResizedCrop(size, {scale = {0.08, 1}, ratio = {3/4, 4/3}}) torchvision's choice of box
--   RandomHorizontalFlip(p = 0.5)
--   ColorJitter{brightness, contrast, saturation} each factor uniform in [max(0, 1 - a), 1 + a],
--                         applied in that order (torchvision shuffles the order), clamped to [0, 1]
--   Normalize(mean, std)  per channel (x - mean) / std; one value or one per channel
--   Grayscale()           0.299 R + 0.587 G + 0.114 B: [1, H, W]
local ffi = require 'ffi'
local options = require 'fastnn.options'
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local too_many = fnn_tensor.too_many
local show = options.show
local floor = math.floor

local M = {}

local Transform = require('fastnn.class')('Transform')

local function make(name, steps)
   local n = #steps
   local arr = ffi.new('fnn_transform_step[?]', math.max(n, 1))
   for i, s in ipairs(steps) do
      local d = arr[i - 1]
      d.kind, d.h, d.w = s.kind, s.h or 0, s.w or 0
      for k = 1, 8 do d.p[k - 1] = s.p and s.p[k] or 0 end
   end
   return setmetatable({name = name, steps = steps, n = n, c_steps = arr}, Transform)
end

-- a seed (a number, or nil: one draw from fastnn's random source) as a splitmix64 state
function M.state(seed, extra)
   if extra ~= nil then too_many('transforms.state', 2, extra, 'seed') end
   if seed == nil then seed = floor(C.fnn_random_uniform() * 2^52) end
   local s = ffi.new('uint64_t[1]')
   s[0] = ffi.cast('uint64_t', seed) * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL
   return s
end

-- apply to one picture; state: a uint64_t[1] from M.state (advanced), a number (a seed), or nil
function Transform:apply(x, state, extra)
   if extra ~= nil then too_many('transforms.' .. self.name, 4, extra, 'transform, x, state') end
   if not fnn_tensor.is_tensor(x) then
      error(('transforms.%s: expected a picture tensor [C,H,W], got %s'):format(self.name, show(x)), 2)
   end
   if type(state) ~= 'cdata' then state = M.state(state) end
   local out = fnn_tensor.new()
   if C.fnn_transform_apply(out, x, self.n, self.c_steps, state) ~= 0 then fnn_tensor.fail() end
   return fnn_tensor.done(out)
end
Transform.__call = Transform.apply

function Transform:__tostring() return 'transforms.' .. self.name end

local function is_transform(t, extra)
   if extra ~= nil then too_many('transforms.is_transform', 2, extra, 't') end
   return getmetatable(t) == Transform
end
M.is_transform = is_transform

local function size_arg(op, size)
   if type(size) == 'number' and size == floor(size) and size >= 1 then return size, size end
   if type(size) == 'table' and #size == 2 then
      local h, w = size[1], size[2]
      if type(h) == 'number' and type(w) == 'number' and h == floor(h) and w == floor(w) and h >= 1 and w >= 1 then
         return h, w
      end
   end
   error(('transforms.%s: expected a size (a positive whole number or {h, w}), got %s'):format(op, show(size)), 3)
end

function M.Compose(list, extra)
   if extra ~= nil then too_many('transforms.Compose', 2, extra, 'list') end
   if type(list) ~= 'table' then error('transforms.Compose: expected a list of transforms, got ' .. show(list), 2) end
   local steps = {}
   for i, t in ipairs(list) do
      if not is_transform(t) then
         error(('transforms.Compose: item %d is %s, expected a transform'):format(i, show(t)), 2)
      end
      for _, s in ipairs(t.steps) do steps[#steps + 1] = s end
   end
   return make('Compose', steps)
end

function M.Resize(size, extra)
   if extra ~= nil then too_many('transforms.Resize', 2, extra, 'size') end
   if type(size) == 'number' then
      local h = size_arg('Resize', size)
      return make('Resize', {{kind = C.FNN_TRANSFORM_RESIZE, h = h, w = 0}})
   end
   local h, w = size_arg('Resize', size)
   return make('Resize', {{kind = C.FNN_TRANSFORM_RESIZE, h = h, w = w}})
end

function M.CenterCrop(size, extra)
   if extra ~= nil then too_many('transforms.CenterCrop', 2, extra, 'size') end
   local h, w = size_arg('CenterCrop', size)
   return make('CenterCrop', {{kind = C.FNN_TRANSFORM_CENTER_CROP, h = h, w = w}})
end

local function pair(v) return type(v) == 'table' and #v == 2 and type(v[1]) == 'number' and type(v[2]) == 'number' end
local RRC = options.declare('data.transforms.RandomResizedCrop', {
   {'scale', 'table', {0.08, 1.0}, "the crop's area as a fraction of the picture's, {lo, hi}",
    check = function(v) if not (pair(v) and v[1] > 0 and v[1] <= v[2] and v[2] <= 1) then return 'expected {lo, hi} with 0 < lo <= hi <= 1' end end},
   {'ratio', 'table', {3 / 4, 4 / 3}, "the crop's width / height, {lo, hi} (drawn log-uniform)",
    check = function(v) if not (pair(v) and v[1] > 0 and v[1] <= v[2]) then return 'expected {lo, hi} with 0 < lo <= hi' end end},
})

function M.RandomResizedCrop(size, opts, extra)
   if extra ~= nil then too_many('transforms.RandomResizedCrop', 3, extra, 'size, opts') end
   local h, w = size_arg('RandomResizedCrop', size)
   local o = RRC:check(opts, 2)
   return make('RandomResizedCrop', {{kind = C.FNN_TRANSFORM_RANDOM_RESIZED_CROP, h = h, w = w,
                                      p = {o.scale[1], o.scale[2], o.ratio[1], o.ratio[2]}}})
end

function M.RandomHorizontalFlip(p, extra)
   if extra ~= nil then too_many('transforms.RandomHorizontalFlip', 2, extra, 'p') end
   if p == nil then p = 0.5 end
   if type(p) ~= 'number' or p < 0 or p > 1 then
      error('transforms.RandomHorizontalFlip: expected a probability 0..1, got ' .. show(p), 2)
   end
   return make('RandomHorizontalFlip', {{kind = C.FNN_TRANSFORM_HFLIP, p = {p}}})
end

local JITTER = options.declare('data.transforms.ColorJitter', {
   {'brightness', 'number', 0, 'the factor is drawn from [max(0, 1 - a), 1 + a]', min = 0},
   {'contrast', 'number', 0, 'the factor is drawn from [max(0, 1 - a), 1 + a]', min = 0},
   {'saturation', 'number', 0, 'the factor is drawn from [max(0, 1 - a), 1 + a] (colour pictures)', min = 0},
})

function M.ColorJitter(opts, extra)
   if extra ~= nil then too_many('transforms.ColorJitter', 2, extra, 'opts') end
   local o = JITTER:check(opts, 2)
   return make('ColorJitter', {{kind = C.FNN_TRANSFORM_COLOR_JITTER, p = {o.brightness, o.contrast, o.saturation}}})
end

local function values(op, what, v)
   if type(v) == 'number' then v = {v} end
   if type(v) ~= 'table' or #v < 1 or #v > 4 then
      error(('transforms.%s: %s is %s, expected a number or a list of 1 to 4 numbers'):format(op, what, show(v)), 3)
   end
   for _, x in ipairs(v) do
      if type(x) ~= 'number' then error(('transforms.%s: %s is %s, expected numbers'):format(op, what, show(v)), 3) end
   end
   return v
end

function M.Normalize(mean, std, extra)
   if extra ~= nil then too_many('transforms.Normalize', 3, extra, 'mean, std') end
   mean, std = values('Normalize', 'mean', mean), values('Normalize', 'std', std)
   if #mean ~= #std then
      error(('transforms.Normalize: %d means and %d stds'):format(#mean, #std), 2)
   end
   local p = {0, 0, 0, 0, 1, 1, 1, 1}
   for i = 1, #mean do
      if not (std[i] > 0) then error('transforms.Normalize: std ' .. show(std[i]) .. ' is not positive', 2) end
      p[i], p[4 + i] = mean[i], std[i]
   end
   return make('Normalize', {{kind = C.FNN_TRANSFORM_NORMALIZE, h = #mean, p = p}})
end

function M.Grayscale(extra)
   if extra ~= nil then too_many('transforms.Grayscale', 1, extra, '') end
   return make('Grayscale', {{kind = C.FNN_TRANSFORM_GRAYSCALE}})
end

return M
