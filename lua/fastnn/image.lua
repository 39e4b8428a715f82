-- fastnn.image: pictures from and to disk, and what Torch7's `image` package users reach for.
-- A picture is a float32 tensor [C, H, W] in [0, 1] (C = 3 colour, 1 grey); the work is in C
-- (core/io/image.c: libpng, TurboJPEG).
--   local t = fnn.image.load('cat.jpg')            -- [3, H, W]
--   fnn.image.save('small.png', fnn.image.resize(t, 64, 64))
--   fnn.image.save('cat.jpg', t, {quality = 85})
-- resize(t, h, w) or resize(t, size) (the shorter side to size, the aspect kept); crop(t, x1, y1,
-- x2, y2) (0-based, x2 and y2 excluded, as Torch7) or crop(t, 'c'|'tl'|'tr'|'bl'|'br', w, h);
-- hflip(t); to_gray(t) -> [1, H, W].
local ffi = require 'ffi'
local tensor = require 'fastnn.tensor'
local options = require 'fastnn.options'
local C, new, done = tensor.C, tensor.new, tensor.done
local floor = math.floor

local M = {}

local function fail(op)
   error(op .. ': ' .. ffi.string(C.fnn_last_error()):gsub('^image%.[%w_]+: ', ''), 3)
end

local function want_image(op, t, pos)
   if not tensor.is_tensor(t) then
      error(('%s: expected a picture tensor [C,H,W] as argument %d, got %s'):format(op, pos or 1,
            options.show(t)), 3)
   end
end

local function want_int(op, v, what)
   if type(v) ~= 'number' or v ~= floor(v) then
      error(('%s: expected a whole number for %s, got %s'):format(op, what, options.show(v)), 3)
   end
end

-- the picture at path (PNG or JPEG) as float32 [C, H, W] in [0, 1]; an error naming the file when
-- it cannot be read or decoded
function M.load(path)
   if type(path) ~= 'string' then error('image.load: expected a path, got ' .. options.show(path), 2) end
   local out = new()
   if C.fnn_image_load(out, path) ~= 0 then fail('image.load') end
   return done(out)
end

local SAVE = options.declare('image.save', {
   {'quality', 'integer', 90, 'JPEG quality, 1 (smallest) to 100 (best); PNG is lossless and ignores it',
    min = 1, max = 100},
})

-- path <- t ([C, H, W], C 1 or 3, or [H, W]), PNG or JPEG by the extension (.png, .jpg, .jpeg)
function M.save(path, t, opts)
   if type(path) ~= 'string' then error('image.save: expected a path, got ' .. options.show(path), 2) end
   want_image('image.save', t, 2)
   local o = SAVE:check(opts, 2)
   if C.fnn_image_save(path, t, o.quality) ~= 0 then fail('image.save') end
end

local function dims(t)
   local s = t:shape()
   if #s == 2 then return 1, s[1], s[2] end
   return s[1], s[2], s[3]
end

-- resize(t, h, w), or resize(t, size): the shorter side becomes size, the other keeps the aspect
-- (rounded down, as torchvision). Bilinear; antialiased when shrinking.
function M.resize(t, h, w)
   want_image('image.resize', t)
   if w == nil then
      want_int('image.resize', h, 'the size')
      local _, H, W = dims(t)
      if H <= W then h, w = h, floor(W * h / H) else h, w = floor(H * h / W), h end
   end
   want_int('image.resize', h, 'the height')
   want_int('image.resize', w, 'the width')
   local out = new()
   if C.fnn_image_resize(out, t, h, w) ~= 0 then fail('image.resize') end
   return done(out)
end

local function crop_box(t, top, left, h, w)
   local out = new()
   if C.fnn_image_crop(out, t, top, left, h, w) ~= 0 then fail('image.crop') end
   return done(out)
end

-- crop(t, x1, y1, x2, y2): columns x1 .. x2 - 1, rows y1 .. y2 - 1 (0-based, as Torch7's image.crop);
-- crop(t, format, w, h): a w x h box at 'c' (centre), 'tl', 'tr', 'bl' or 'br'
function M.crop(t, a, b, c, d)
   want_image('image.crop', t)
   if type(a) == 'string' then
      want_int('image.crop', b, 'the width')
      want_int('image.crop', c, 'the height')
      local _, H, W = dims(t)
      local w, h = b, c
      local top, left
      if a == 'c' then top, left = floor((H - h) / 2), floor((W - w) / 2)   -- as Torch7
      elseif a == 'tl' then top, left = 0, 0
      elseif a == 'tr' then top, left = 0, W - w
      elseif a == 'bl' then top, left = H - h, 0
      elseif a == 'br' then top, left = H - h, W - w
      else error("image.crop: format must be 'c', 'tl', 'tr', 'bl' or 'br', got " .. options.show(a), 2) end
      return crop_box(t, top, left, h, w)
   end
   want_int('image.crop', a, 'x1')
   want_int('image.crop', b, 'y1')
   want_int('image.crop', c, 'x2')
   want_int('image.crop', d, 'y2')
   return crop_box(t, b, a, d - b, c - a)
end

-- image.<name>(t): one picture in, one out, through fnn_image_<name>
local function picture_op(name)
   local op, cfn = 'image.' .. name, C['fnn_image_' .. name]
   return function(t)
      want_image(op, t)
      local out = new()
      if cfn(out, t) ~= 0 then fail(op) end
      return done(out)
   end
end

M.hflip = picture_op('hflip')

-- [1, H, W]: 0.299 R + 0.587 G + 0.114 B (a grey picture is copied)
M.to_gray = picture_op('to_gray')

return M
