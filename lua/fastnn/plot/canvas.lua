-- fastnn.plot.canvas: an RGB byte raster for fastnn.plot, written out by libpng (core/io/png.c).
--   local cv = canvas.new(w, h, {255, 255, 255})
--   cv:line(x0, y0, x1, y1, colour, width); cv:disc(x, y, r, colour); cv:rect(x0, y0, x1, y1, colour)
--   cv:text(x, y, 'label', colour, scale); cv:text_up(x, y, 'label', colour); cv:write(path)
-- Pixel coordinates are 0-based from the top-left corner, as in the PNG; colours are {r, g, b} in 0..255.
-- Lines and discs are anti-aliased by their coverage of each pixel (distance to the shape).
local ffi = require 'ffi'
local C = require 'fastnn.C'
local font = require 'fastnn.plot.font'
local floor, ceil, max, min, sqrt = math.floor, math.ceil, math.max, math.min, math.sqrt

local M = {}
local Canvas = require('fastnn.class')('Canvas')

function M.new(w, h, bg)
   local self = setmetatable({w = w, h = h, buf = ffi.new('uint8_t[?]', w * h * 3)}, Canvas)
   self:no_clip()
   bg = bg or {255, 255, 255}
   if bg[1] ~= 0 or bg[2] ~= 0 or bg[3] ~= 0 then self:rect(0, 0, w - 1, h - 1, bg) end
   return self
end

-- drawing stays inside the clip rectangle (inclusive pixel bounds)
function Canvas:clip(x0, y0, x1, y1)
   self.cx0, self.cy0 = max(0, x0), max(0, y0)
   self.cx1, self.cy1 = min(self.w - 1, x1), min(self.h - 1, y1)
end
function Canvas:no_clip() self:clip(0, 0, self.w - 1, self.h - 1) end

-- colour c over pixel (x, y) with opacity a (0..1)
function Canvas:blend(x, y, c, a)
   if x < self.cx0 or x > self.cx1 or y < self.cy0 or y > self.cy1 or a <= 0 then return end
   local i = (y * self.w + x) * 3
   local buf = self.buf
   if a >= 1 then
      buf[i], buf[i + 1], buf[i + 2] = c[1], c[2], c[3]
   else
      buf[i] = floor(buf[i] + (c[1] - buf[i]) * a + 0.5)
      buf[i + 1] = floor(buf[i + 1] + (c[2] - buf[i + 1]) * a + 0.5)
      buf[i + 2] = floor(buf[i + 2] + (c[3] - buf[i + 2]) * a + 0.5)
   end
end

function Canvas:get(x, y)
   local i = (y * self.w + x) * 3
   return self.buf[i], self.buf[i + 1], self.buf[i + 2]
end

-- a filled rectangle, inclusive pixel bounds
function Canvas:rect(x0, y0, x1, y1, c)
   x0, y0 = max(floor(x0), self.cx0), max(floor(y0), self.cy0)
   x1, y1 = min(floor(x1), self.cx1), min(floor(y1), self.cy1)
   local buf, w, r, g, b = self.buf, self.w, c[1], c[2], c[3]
   for y = y0, y1 do
      local i = (y * w + x0) * 3
      for _ = x0, x1 do
         buf[i], buf[i + 1], buf[i + 2] = r, g, b
         i = i + 3
      end
   end
end

-- a one-pixel outline of a rectangle
function Canvas:frame(x0, y0, x1, y1, c)
   self:rect(x0, y0, x1, y0, c); self:rect(x0, y1, x1, y1, c)
   self:rect(x0, y0, x0, y1, c); self:rect(x1, y0, x1, y1, c)
end

-- a segment of the given width between pixel centres (x, y may be fractional)
function Canvas:line(x0, y0, x1, y1, c, width)
   local half = (width or 1) / 2
   local dx, dy = x1 - x0, y1 - y0
   local len2 = dx * dx + dy * dy
   local reach = half + 1
   local xa, xb = max(floor(min(x0, x1) - reach), self.cx0), min(ceil(max(x0, x1) + reach), self.cx1)
   local ya, yb = max(floor(min(y0, y1) - reach), self.cy0), min(ceil(max(y0, y1) + reach), self.cy1)
   for y = ya, yb do
      for x = xa, xb do
         -- distance from the pixel centre to the segment
         local t = len2 > 0 and ((x - x0) * dx + (y - y0) * dy) / len2 or 0
         t = t < 0 and 0 or (t > 1 and 1 or t)
         local ex, ey = x - (x0 + t * dx), y - (y0 + t * dy)
         local cover = half + 0.5 - sqrt(ex * ex + ey * ey)
         if cover > 0 then self:blend(x, y, c, cover) end
      end
   end
end

-- a filled disc of radius r centred on (cx, cy)
function Canvas:disc(cx, cy, r, c)
   for y = max(floor(cy - r - 1), self.cy0), min(ceil(cy + r + 1), self.cy1) do
      for x = max(floor(cx - r - 1), self.cx0), min(ceil(cx + r + 1), self.cx1) do
         local d = sqrt((x - cx) ^ 2 + (y - cy) ^ 2)
         local cover = r + 0.5 - d
         if cover > 0 then self:blend(x, y, c, cover) end
      end
   end
end

-- text with its top-left corner at (x, y), each font pixel a scale x scale block
function Canvas:text(x, y, s, c, scale)
   scale = scale or 1
   x, y = floor(x), floor(y)
   for k = 1, #s do
      local g = font.glyph(s:byte(k))
      for col = 1, 5 do
         local bits = g[col]
         for row = 0, 6 do
            if bits % 2 == 1 then
               local px, py = x + (col - 1) * scale, y + row * scale
               if scale == 1 then self:blend(px, py, c, 1)
               else self:rect(px, py, px + scale - 1, py + scale - 1, c) end
            end
            bits = floor(bits / 2)
         end
      end
      x = x + font.advance * scale
   end
end

-- text turned a quarter left (read from the bottom up); (x, y) is the top-left corner of its box,
-- which is font.height wide and font.text_width(s) tall
function Canvas:text_up(x, y, s, c)
   x, y = floor(x), floor(y)
   local bottom = y + font.text_width(s) - 1
   for k = 1, #s do
      local g = font.glyph(s:byte(k))
      for col = 1, 5 do
         local bits = g[col]
         for row = 0, 6 do
            if bits % 2 == 1 then self:blend(x + row, bottom - ((k - 1) * font.advance + col - 1), c, 1) end
            bits = floor(bits / 2)
         end
      end
   end
end

-- the picture as a PNG file; true, or nil and libpng's or the system's message
function Canvas:write(path)
   if C.fnn_png_write(path, self.w, self.h, 3, self.buf) ~= 0 then return nil, ffi.string(C.fnn_last_error()) end
   return true
end

return M
