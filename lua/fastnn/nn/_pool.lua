-- Shared by the pooling and upsampling layers:
--   require('fastnn.nn._pool').pool('MaxPool1d', 'max', 1)      -- MaxPool1d/2d/3d, AvgPool1d/2d/3d
--   require('fastnn.nn._pool').global('GlobalAvgPool2d', 'avg', 2)
--   require('fastnn.nn._pool').upsampling('UpSampling2d', 2)
-- Each makes a parameter-free layer class over channels-first inputs, batched or not; the work is
-- one C op (pools, upsampling) or one reduction over the flattened spatial dims (global pools).
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local pool_ops = require 'fastnn.ops.pool'
local C = fnn_tensor.C
local new, done, fail, istype, shape_str = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor,
   fnn_tensor.shape_str
local tuple, dims_str, layouts = pool_ops._tuple, pool_ops._dims_str, pool_ops._layouts
local unpack = unpack

local M = {}

local options = require 'fastnn.options'

-- input checks of a layer over `dims` spatial dims (errors at the caller of forward)
local function check_input(label, x, dims)
   if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(label, type(x)), 3) end
   if x.ndim ~= dims + 2 and x.ndim ~= dims + 1 then
      error(('%s: input %s must be %s'):format(label, shape_str(x), layouts[dims]), 3)
   end
end

-- ---------------------------------------------------------------------------
-- nn.MaxPoolNd / nn.AvgPoolNd(kernel, {stride = kernel, padding = 0, ceil_mode = false
-- [, count_include_pad = true]}); kernel, stride, padding: numbers or one per spatial dim

function M.pool(name, kind, dims)
   local cls = nn.Module:extend(name)
   local cfn = C[('fnn_%s_pool%dd'):format(kind, dims)]
   local full = 'nn.' .. name
   local ints = 'an integer or a table of ' .. dims
   local entries = {
      {'stride', 'integer|table', nil, 'step of the window: ' .. ints, default_doc = 'the kernel'},
      {'padding', 'integer|table', 0, 'implicit padding on each side: ' .. ints},
      {'ceil_mode', 'boolean', false, 'round the output size up instead of down'},
   }
   if kind == 'avg' then
      entries[#entries + 1] = {'count_include_pad', 'boolean', true, 'count padded zeros in the average'}
   end
   local OPTS = options.declare(full, entries)

   function cls:__init(kernel, opts)
      -- 1 here, 2 __call, 3 the user's line
      opts = OPTS:check(opts, 3)
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
      if kind == 'avg' then
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
   function cls:forward(x)
      if not istype(x) then error(('%s: input is a %s, expected a tensor'):format(name, type(x)), 2) end
      local out = new()
      if cfn(out, x, unpack(self._args)) ~= 0 then fail() end
      return done(out)
   end

   local function same(a, b)
      for i = 1, dims do if a[i] ~= b[i] then return false end end
      return true
   end
   function cls:__tostring()
      local s = ('%s(%s'):format(full, dims_str(self.kernel))
      if not same(self.stride, self.kernel) then s = s .. ', stride ' .. dims_str(self.stride) end
      for i = 1, dims do
         if self.padding[i] ~= 0 then s = s .. ', padding ' .. dims_str(self.padding); break end
      end
      if self.ceil_mode then s = s .. ', ceil_mode' end
      if kind == 'avg' and not self.count_include_pad then s = s .. ', count_include_pad = false' end
      return s .. ')'
   end
   return cls
end

-- ---------------------------------------------------------------------------
-- nn.GlobalMaxPoolNd / nn.GlobalAvgPoolNd({keepdims = false}): the max or mean over all spatial
-- dims, [N, C, ...] -> [N, C] (Keras), or [N, C, 1, ...] with keepdims; unbatched [C, ...] -> [C]

function M.global(name, kind, dims)
   local cls = nn.Module:extend(name)
   local full = 'nn.' .. name
   local OPTS = options.declare(full, {
      {'keepdims', 'boolean', false, 'keep the spatial dims as size 1'},
   })

   function cls:__init(opts)
      opts = OPTS:check(opts, 3)
      self.keepdims = opts.keepdims and true or false
   end

   function cls:forward(x)
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
      if kind == 'max' then y = flat:max(lead + 1) else y = flat:mean(lead + 1) end
      if self.keepdims then
         for i = lead + 1, x.ndim do shape[i] = 1 end
         y = y:reshape(shape)
      end
      return y
   end

   function cls:__tostring() return self.keepdims and full .. '(keepdims)' or full end
   return cls
end

-- ---------------------------------------------------------------------------
-- nn.UpSamplingNd(factor, {mode = 'nearest', align_corners = false}) or
-- nn.UpSamplingNd({size = ... | scale_factor = ..., mode, align_corners}): factor is a positive
-- integer or one per spatial dim (Keras' size), 2 by default; size a fixed output size (a number
-- or one per spatial dim)

local MODES = {nearest = true, bilinear = true}

function M.upsampling(name, dims)
   local cls = nn.Module:extend(name)
   local full = 'nn.' .. name
   local per = 'an integer or a table of ' .. dims
   local OPTS = options.declare(full, {
      {'size', 'integer|table', nil, 'a fixed output size: ' .. per .. ' (instead of a factor)'},
      {'scale_factor', 'integer|table', nil, 'the factor (PyTorch spelling of the positional argument): ' .. per,
       default_doc = '2'},
      {'mode', 'string', 'nearest', "'nearest', or 'bilinear' for 2 spatial dims", values = {'nearest', 'bilinear'}},
      {'align_corners', 'boolean', nil, "align the corner pixels (mode 'bilinear' only)", default_doc = 'false'},
   })

   function cls:__init(factor, opts)
      if type(factor) == 'table' and factor[1] == nil and opts == nil then factor, opts = nil, factor end
      opts = OPTS:check(opts, 3)
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

   function cls:forward(x)
      check_input(name, x, dims)
      local size = self.size or pool_ops._scaled_size(name, x, dims, self.scale_factor, 2)
      local y = pool_ops._resize(x, dims, size, self.mode, self.align_corners)   -- not a tail call: keeps the level
      return y
   end

   function cls:__tostring()
      local s = full .. '(' .. (self.size and 'size ' .. dims_str(self.size) or dims_str(self.scale_factor))
      if self.mode ~= 'nearest' then s = s .. ', ' .. self.mode end
      if self.align_corners then s = s .. ', align_corners' end
      return s .. ')'
   end
   return cls
end

return M
