-- The pooling and upsampling layers: parameter-free layers over channels-first inputs, batched or
-- not. The windowed pools (MaxPool, AvgPool) and UpSampling are one C op per call; the global
-- pools one reduction over the flattened spatial dims. Each kind is a base class with the
-- methods; its 1d/2d/3d classes are subclasses below it that set the spatial dims:
--   MaxPool -> MaxPool1d, MaxPool2d, MaxPool3d       AvgPool -> AvgPool1d, AvgPool2d, AvgPool3d
--   GlobalMaxPool -> GlobalMaxPool1d/2d/3d           GlobalAvgPool -> GlobalAvgPool1d/2d/3d
--   UpSampling -> UpSampling1d/2d/3d                 AdaptiveAvgPool2d
-- The Keras spellings (MaxPooling2D, GlobalAveragePooling2D, UpSampling2D, ...) are in
-- nn/init.lua's table: MaxPooling*/AveragePooling* in keras_layers.lua, the others these classes.
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local options = require 'fastnn.options'
local pool_ops = require 'fastnn.ops.pool'
local C = fnn_tensor.C
local new, done, fail, istype, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor,
   fnn_tensor.shape_str
local tuple, dims_str, layouts = pool_ops._tuple, pool_ops._dims_str, pool_ops._layouts
local unpack = unpack

local M = {}

-- input checks of a layer over `dims` spatial dims (errors at the caller of forward)
local function check_input(label, x, dims)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(label, type(x)), 3) end
   if x.ndim ~= dims + 2 and x.ndim ~= dims + 1 then
      error(('%s: input %s must be %s'):format(label, shape_str(x), layouts[dims]), 3)
   end
end

-- a subclass of base over `dims` spatial dims; base._declare(name, dims) declares its options.
-- _title names the class in messages and printing (a Keras subclass keeps its parent's: MaxPooling2D
-- prints as nn.MaxPool2d(...))
local function dims_class(base, name, dims)
   local cls = base:extend(name)
   cls._dims, cls._title = dims, name
   cls._OPTS = base._declare('nn.' .. name, dims)
   M[name] = cls
   return cls
end

-- ---------------------------------------------------------------------------
-- MaxPool and AvgPool: nn.MaxPoolNd / nn.AvgPoolNd(kernel, {stride = kernel, padding = 0,
-- ceil_mode = false [, count_include_pad = true]}); kernel, stride, padding: numbers or one per
-- spatial dim. _kind 'max' or 'avg' picks the C op fnn_<kind>_pool<dims>d.

local Pool = nn.Module:extend('Pool')

function Pool._declare(full, dims, kind)
   local ints = 'an integer or a table of ' .. dims
   local entries = {
      {'stride', 'integer|table', nil, 'step of the window: ' .. ints, default_doc = 'the kernel'},
      {'padding', 'integer|table', 0, 'implicit padding on each side: ' .. ints},
      {'ceil_mode', 'boolean', false, 'round the output size up instead of down'},
   }
   if kind == 'avg' then
      entries[#entries + 1] = {'count_include_pad', 'boolean', true, 'count padded zeros in the average'}
   end
   return options.declare(full, entries)
end

function Pool:__init(kernel, opts)
   local dims, full = self._dims, 'nn.' .. self._title
   -- 1 here, 2 __call, 3 the user's line
   opts = self._OPTS:check(opts, 3)
   if kernel == nil then error(('%s: kernel size missing'):format(full), 3) end
   -- tuple's errors: 1 tuple, 2 __init, 3 __call, 4 the user's line
   self.kernel = tuple(full, 'kernel', kernel, dims, nil, 4)
   self.stride = tuple(full, 'stride', opts.stride, dims, self.kernel, 4)
   self.padding = tuple(full, 'padding', opts.padding, dims, 0, 4)
   self.ceil_mode = opts.ceil_mode and true or false
   local args = {}
   for _, t in ipairs{self.kernel, self.stride, self.padding} do
      for i = 1, dims do args[#args + 1] = t[i] end
   end
   args[#args + 1] = self.ceil_mode and 1 or 0
   if self._kind == 'avg' then
      self.count_include_pad = opts.count_include_pad == nil or opts.count_include_pad and true or false
      args[#args + 1] = self.count_include_pad and 1 or 0
   end
   self._args = args
   if dims == 2 then   -- the names the 2-d layers always had
      self.kh, self.kw, self.sh, self.sw = self.kernel[1], self.kernel[2], self.stride[1], self.stride[2]
      self.ph, self.pw = self.padding[1], self.padding[2]
   end
end

-- the C op checks the rank and sizes and names itself (max_pool1d: ...)
function Pool:forward(x)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(self._title, type(x)), 2) end
   local out = new()
   if self._cfn(out, x, unpack(self._args)) ~= 0 then fail() end
   return done(out)
end

local function same(a, b, dims)
   for i = 1, dims do if a[i] ~= b[i] then return false end end
   return true
end

function Pool:__tostring()
   local dims = self._dims
   local s = ('nn.%s(%s'):format(self._title, dims_str(self.kernel))
   if not same(self.stride, self.kernel, dims) then s = s .. ', stride ' .. dims_str(self.stride) end
   for i = 1, dims do
      if self.padding[i] ~= 0 then s = s .. ', padding ' .. dims_str(self.padding); break end
   end
   if self.ceil_mode then s = s .. ', ceil_mode' end
   if self._kind == 'avg' and not self.count_include_pad then s = s .. ', count_include_pad = false' end
   return s .. ')'
end

local MaxPool = Pool:extend('MaxPool')
MaxPool._kind = 'max'
function MaxPool._declare(full, dims) return Pool._declare(full, dims, 'max') end

local AvgPool = Pool:extend('AvgPool')
AvgPool._kind = 'avg'
function AvgPool._declare(full, dims) return Pool._declare(full, dims, 'avg') end

local function pool_class(base, name, dims)
   local cls = dims_class(base, name, dims)
   cls._cfn = C[('fnn_%s_pool%dd'):format(base._kind, dims)]
   return cls
end

-- nn.MaxPool1d(kernel, {stride = kernel, padding = 0, ceil_mode = false}): the maximum of each
-- window over [N, C, L] or [C, L]; padding counts as -inf and may be at most half the kernel.
-- kernel, stride and padding are numbers (or {k}).
local MaxPool1d = pool_class(MaxPool, 'MaxPool1d', 1)

-- nn.MaxPool2d(kernel, {stride = kernel, padding = 0, ceil_mode = false}): the maximum of each
-- window over [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]; padding counts as -inf and may be at
-- most half the kernel. kernel, stride and padding are numbers or {h, w}. (fnn.max_pool2d, in conv.)
local MaxPool2d = pool_class(MaxPool, 'MaxPool2d', 2)

-- nn.MaxPool3d(kernel, {stride = kernel, padding = 0, ceil_mode = false}): the maximum of each
-- window over [N, C, D, H, W] or [C, D, H, W]; padding counts as -inf and may be at most half the
-- kernel. kernel, stride and padding are numbers or {d, h, w}.
local MaxPool3d = pool_class(MaxPool, 'MaxPool3d', 3)

-- nn.AvgPool1d(kernel, {stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true}):
-- the mean of each window over [N, C, L] or [C, L]. With count_include_pad the divisor counts the
-- zero padding inside the window (PyTorch's default). kernel, stride and padding are numbers (or {k}).
local AvgPool1d = pool_class(AvgPool, 'AvgPool1d', 1)

-- nn.AvgPool2d(kernel, {stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true}):
-- the mean of each window over [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]. With
-- count_include_pad the divisor counts the zero padding inside the window (PyTorch's default).
-- kernel, stride and padding are numbers or {h, w}. (fnn.avg_pool2d, in conv.)
local AvgPool2d = pool_class(AvgPool, 'AvgPool2d', 2)

-- nn.AvgPool3d(kernel, {stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true}):
-- the mean of each window over [N, C, D, H, W] or [C, D, H, W]. With count_include_pad the
-- divisor counts the zero padding inside the window (PyTorch's default). kernel, stride and
-- padding are numbers or {d, h, w}.
local AvgPool3d = pool_class(AvgPool, 'AvgPool3d', 3)

-- ---------------------------------------------------------------------------
-- GlobalMaxPool and GlobalAvgPool: nn.GlobalMaxPoolNd / nn.GlobalAvgPoolNd({keepdims = false}):
-- the max or mean over all spatial dims, [N, C, ...] -> [N, C] (Keras), or [N, C, 1, ...] with
-- keepdims; unbatched [C, ...] -> [C]

local GlobalPool = nn.Module:extend('GlobalPool')

function GlobalPool._declare(full)
   return options.declare(full, {
      {'keepdims', 'boolean', false, 'keep the spatial dims as size 1'},
   })
end

function GlobalPool:__init(opts)
   opts = self._OPTS:check(opts, 3)
   self.keepdims = opts.keepdims and true or false
end

function GlobalPool:forward(x)
   local name, dims = self._title, self._dims
   check_input(name, x, dims)
   local lead = x.ndim - dims
   local shape, spatial = {}, 1
   for i = 1, lead do shape[i] = tonumber(x.shape_[i - 1]) end
   for i = lead + 1, x.ndim do spatial = spatial * tonumber(x.shape_[i - 1]) end
   if spatial == 0 then
      error(('%s: input %s has an empty spatial extent'):format(name, shape_str(x)), 2)
   end
   shape[lead + 1] = spatial
   local flat = x:reshape(shape)
   local y
   if self._kind == 'max' then y = flat:max(lead + 1) else y = flat:mean(lead + 1) end
   if self.keepdims then
      for i = lead + 1, x.ndim do shape[i] = 1 end
      y = y:reshape(shape)
   end
   return y
end

function GlobalPool:__tostring()
   local full = 'nn.' .. self._title
   return self.keepdims and full .. '(keepdims)' or full
end

local GlobalMaxPool = GlobalPool:extend('GlobalMaxPool')
GlobalMaxPool._kind = 'max'
local GlobalAvgPool = GlobalPool:extend('GlobalAvgPool')
GlobalAvgPool._kind = 'avg'

-- nn.GlobalMaxPool1d({keepdims = false}): the maximum over the spatial dims, [N, C, L] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
local GlobalMaxPool1d = dims_class(GlobalMaxPool, 'GlobalMaxPool1d', 1)

-- nn.GlobalMaxPool2d({keepdims = false}): the maximum over the spatial dims, [N, C, H, W] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
local GlobalMaxPool2d = dims_class(GlobalMaxPool, 'GlobalMaxPool2d', 2)

-- nn.GlobalMaxPool3d({keepdims = false}): the maximum over the spatial dims, [N, C, D, H, W] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
local GlobalMaxPool3d = dims_class(GlobalMaxPool, 'GlobalMaxPool3d', 3)

-- nn.GlobalAvgPool1d({keepdims = false}): the mean over the spatial dims, [N, C, L] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
local GlobalAvgPool1d = dims_class(GlobalAvgPool, 'GlobalAvgPool1d', 1)

-- nn.GlobalAvgPool2d({keepdims = false}): the mean over the spatial dims, [N, C, H, W] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
local GlobalAvgPool2d = dims_class(GlobalAvgPool, 'GlobalAvgPool2d', 2)

-- nn.GlobalAvgPool3d({keepdims = false}): the mean over the spatial dims, [N, C, D, H, W] -> [N, C]
-- (Keras), or with size-1 spatial dims kept when keepdims; unbatched input drops N.
local GlobalAvgPool3d = dims_class(GlobalAvgPool, 'GlobalAvgPool3d', 3)

-- ---------------------------------------------------------------------------
-- UpSampling: nn.UpSamplingNd(factor, {mode = 'nearest', align_corners = false}) or
-- nn.UpSamplingNd({size = ... | scale_factor = ..., mode, align_corners}): factor is a positive
-- integer or one per spatial dim (Keras' size), 2 by default; size a fixed output size (a number
-- or one per spatial dim)

local MODES = {nearest = true, bilinear = true}

local UpSampling = nn.Module:extend('UpSampling')

function UpSampling._declare(full, dims)
   local per = 'an integer or a table of ' .. dims
   return options.declare(full, {
      {'size', 'integer|table', nil, 'a fixed output size: ' .. per .. ' (instead of a factor)'},
      {'scale_factor', 'integer|table', nil, 'the factor (PyTorch spelling of the positional argument): ' .. per,
       default_doc = '2'},
      {'mode', 'string', 'nearest', "'nearest', or 'bilinear' for 2 spatial dims", values = {'nearest', 'bilinear'}},
      {'align_corners', 'boolean', nil, "align the corner pixels (mode 'bilinear' only)", default_doc = 'false'},
   })
end

function UpSampling:__init(factor, opts)
   local dims, full = self._dims, 'nn.' .. self._title
   if type(factor) == 'table' and factor[1] == nil and opts == nil then factor, opts = nil, factor end
   opts = self._OPTS:check(opts, 3)
   if factor == nil then factor = opts.scale_factor end   -- PyTorch's nn.Upsample spelling
   if factor ~= nil and opts.size ~= nil then
      error(('%s: give a scale factor or {size = ...}, not both'):format(full), 3)
   end
   if opts.size ~= nil then
      self.size = tuple(full, 'size', opts.size, dims, nil, 4)
      for i = 1, dims do
         if self.size[i] < 1 then error(('%s: size %s must be positive'):format(full, dims_str(self.size)), 3) end
      end
   else
      self.scale_factor = tuple(full, 'scale factor', factor == nil and 2 or factor, dims, nil, 4)
      for i = 1, dims do
         if self.scale_factor[i] < 1 then
            error(('%s: scale factor %s must be positive'):format(full, dims_str(self.scale_factor)), 3)
         end
      end
   end
   local mode = opts.mode or 'nearest'
   if not MODES[mode] then
      error(("%s: mode '%s' is not one of 'nearest', 'bilinear'"):format(full, tostring(mode)), 3)
   end
   if mode == 'bilinear' and dims ~= 2 then
      error(("%s: mode 'bilinear' is for 2 spatial dims (UpSampling2d); use 'nearest'"):format(full), 3)
   end
   if opts.align_corners ~= nil and mode ~= 'bilinear' then
      error(("%s: align_corners applies to mode 'bilinear' only"):format(full), 3)
   end
   self.mode = mode
   self.align_corners = opts.align_corners and true or false
end

function UpSampling:forward(x)
   local name, dims = self._title, self._dims
   check_input(name, x, dims)
   local size = self.size or pool_ops._scaled_size(name, x, dims, self.scale_factor, 2)
   local y = pool_ops._resize(x, dims, size, self.mode, self.align_corners)   -- not a tail call: keeps the level
   return y
end

function UpSampling:__tostring()
   local s = 'nn.' .. self._title .. '(' .. (self.size and 'size ' .. dims_str(self.size) or dims_str(self.scale_factor))
   if self.mode ~= 'nearest' then s = s .. ', ' .. self.mode end
   if self.align_corners then s = s .. ', align_corners' end
   return s .. ')'
end

-- nn.UpSampling1d(factor = 2): repeats each position of [N, C, L] (or [C, L]) factor times (Keras'
-- UpSampling1D size); nn.UpSampling1d{size = n} resizes to n positions by the nearest rule
-- (output o reads input floor(o L / n)). Mode 'nearest' only.
local UpSampling1d = dims_class(UpSampling, 'UpSampling1d', 1)

-- nn.UpSampling2d(factor = 2, {mode = 'nearest', align_corners = false}): enlarges [N, C, H, W]
-- (or [C, H, W]) by an integer factor per spatial dim, a number or {fh, fw} (Keras' size);
-- nn.UpSampling2d{size = {h, w}, mode = ...} resizes to a fixed output size instead.
-- mode 'nearest' (output o reads input floor(o in / out)) or 'bilinear': half-pixel centres, or
-- with align_corners = true the corner pixels of input and output aligned.
local UpSampling2d = dims_class(UpSampling, 'UpSampling2d', 2)

-- nn.UpSampling3d(factor = 2): enlarges [N, C, D, H, W] (or [C, D, H, W]) by an integer factor per
-- spatial dim, a number or {fd, fh, fw} (Keras' size); nn.UpSampling3d{size = {d, h, w}} resizes
-- to a fixed output size instead. Mode 'nearest' only (output o reads input floor(o in / out)).
local UpSampling3d = dims_class(UpSampling, 'UpSampling3d', 3)

-- ---------------------------------------------------------------------------
-- nn.AdaptiveAvgPool2d(output_size): the mean over PyTorch's adaptive windows, [N, C, H, W] (or
-- [C, H, W]) -> [N, C, oh, ow]; output_size is a number or {oh, ow}. Output row i averages input
-- rows floor(i H / oh) .. ceil((i + 1) H / oh) - 1 (windows overlap when oh does not divide H).
local fnn_adaptive_avg_pool2d = C.fnn_adaptive_avg_pool2d

local AdaptiveAvgPool2d = nn.Module:extend('AdaptiveAvgPool2d')

function AdaptiveAvgPool2d:__init(output_size)
   if output_size == nil then error('nn.AdaptiveAvgPool2d: output size missing (a number or {h, w})', 3) end
   -- tuple's errors: 1 tuple, 2 __init, 3 __call, 4 the user's line
   self.output_size = tuple('nn.AdaptiveAvgPool2d', 'output size', output_size, 2, nil, 4)
   if self.output_size[1] < 1 or self.output_size[2] < 1 then
      error(('nn.AdaptiveAvgPool2d: output size %dx%d must be positive'):format(
            self.output_size[1], self.output_size[2]), 3)
   end
end

-- the C op checks the rank and sizes and names itself (adaptive_avg_pool2d: ...)
function AdaptiveAvgPool2d:forward(x)
   if not istype(x) then error(('AdaptiveAvgPool2d: input is a %s, expected a tensor'):format(type(x)), 2) end
   local out = new()
   if fnn_adaptive_avg_pool2d(out, x, self.output_size[1], self.output_size[2]) ~= 0 then fail() end
   return done(out)
end

function AdaptiveAvgPool2d:__tostring()
   return ('nn.AdaptiveAvgPool2d(%dx%d)'):format(self.output_size[1], self.output_size[2])
end

M.AdaptiveAvgPool2d = AdaptiveAvgPool2d

return M
