-- fastnn.plot: PNG pictures of training runs (also fnn.plot). Rasterised here, encoded by libpng.
--   local plot = require 'fastnn.plot'
--   plot.line{path = 'loss.png', title = 'loss', xlabel = 'step', ylabel = 'loss', logy = false,
--             series = {{name = 'train', x = steps, y = losses}, {name = 'validation', y = val}}}
--   plot.scatter{path = 'z.png', series = {{name = 'digit 3', x = zx, y = zy}}}
--   plot.image_grid{path = 'samples.png', images = x, nrow = 8, scale = 2, range = {-1, 1}}
--   plot.heatmap{path = 'confusion.png', matrix = m, row_labels = names, col_labels = names}
-- plot.read_png(path) -> {width, height, channels, pixels} reads a PNG back (specs, checks);
-- plot.ticks(lo, hi, n, log) -> the 1-2-5 ticks an axis gets; plot.palette, plot.colormap(t) the colours.
-- Each returns the path it wrote, then a table of where things were drawn (pixel boxes, 0-based,
-- inclusive: area, legend, cells), for specs and for callers that add to the picture.
-- x and y are Lua arrays or 1-d tensors; NaN and inf points are skipped (a line breaks there).
-- Options (all kinds): width, height (line, scatter: 640 x 400), title, xlabel, ylabel; line and scatter
-- also take legend = 'best' (the default: the corner that covers the fewest points), 'upper right',
-- 'upper left', 'lower left', 'lower right' or false, and logy (log10 y axis; points <= 0 skipped).
-- image_grid: images [N,H,W], [N,1,H,W] or [N,3,H,W]; nrow images per row (8), scale (integer
-- pixel repeat, 1), range {lo, hi} mapped to black..white (default: the batch's min..max), padding (2)
-- pixels of pad_value (1: white, in 0..1 of the range) between and around the images, title. Image k
-- (1-based) of a grid sits at x = padding + c * (W * scale + padding), y = top + padding + r *
-- (H * scale + padding), c = (k - 1) % nrow, r = floor((k - 1) / nrow), top = 0 without a title.
-- heatmap: matrix [R,C] (tensor or table of rows) in viridis, a colour bar, row_labels, col_labels,
-- annotate (true: each value printed in its cell when it fits), cell (pixels per cell), range {lo, hi}.
local fnn_tensor = require 'fastnn.tensor'
local canvas = require 'fastnn.plot.canvas'
local font = require 'fastnn.plot.font'
local ffi = require 'ffi'
local C = fnn_tensor.C
local floor, ceil, max, min, abs, log10 = math.floor, math.ceil, math.max, math.min, math.abs, math.log10

local M = {}

-- matplotlib's tab10, the series colours in order
M.palette = {
   {31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189},
   {140, 86, 75}, {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
}
local WHITE, BLACK, INK, GRID = {255, 255, 255}, {0, 0, 0}, {34, 34, 34}, {230, 230, 230}
local FH = font.height

---------------------------------------------------------------- errors

-- a mistake in the caller's options: raised as a table so the public wrapper can re-raise it at the
-- caller's line; anything else (a bug here) keeps its own position
local function bad(op, fmt, ...) error({msg = op .. ': ' .. fmt:format(...)}, 0) end

-- each picture's options, declared once (docs/options.md); impl reads only what check returns
local options = require 'fastnn.options'
local PATH = {'path', 'string', nil, 'the PNG file written', default_doc = 'required'}
local TITLE = {'title', 'any', nil, 'a title above the picture'}
local XLABEL, YLABEL = {'xlabel', 'any', nil, 'the x axis label'}, {'ylabel', 'any', nil, 'the y axis label'}
local RANGE = {'range', 'table', nil, '{lo, hi} mapped to the ends of the scale', default_doc = 'the data\'s min..max'}
local XY = {PATH, {'series', 'table', nil, 'an array of {name =, x =, y =} (x: 1..n when left out)', default_doc = 'required'},
            TITLE, XLABEL, YLABEL,
            {'width', 'integer', 640, 'pixels', min = 1}, {'height', 'integer', 400, 'pixels', min = 1},
            {'logy', 'boolean', false, 'a log10 y axis (points <= 0 skipped)'},
            {'legend', 'string|boolean', 'best', "'best' (the corner covering the fewest points), 'upper right', "
             .. "'upper left', 'lower left', 'lower right' or false"}}
local DECL = {
   ['plot.line'] = XY, ['plot.scatter'] = XY,
   ['plot.image_grid'] = {PATH, {'images', 'tensor', nil, '[N,H,W], [N,1,H,W] or [N,3,H,W]', default_doc = 'required'},
      {'nrow', 'integer', 8, 'images per row', min = 1}, {'scale', 'integer', 1, 'pixel repeat', min = 1}, RANGE,
      {'padding', 'integer', 2, 'pixels between and around the images', min = 0},
      {'pad_value', 'number', 1, 'the padding\'s shade, 0..1 of the range (1: white)'}, TITLE},
   ['plot.heatmap'] = {PATH, {'matrix', 'any', nil, '[R,C]: a tensor or a table of rows', default_doc = 'required'},
      {'row_labels', 'table', nil, 'R strings'}, {'col_labels', 'table', nil, 'C strings'},
      {'annotate', 'boolean', true, 'print each value in its cell when it fits'},
      {'cell', 'integer', nil, 'pixels per cell', min = 1, default_doc = 'from the matrix size'}, RANGE,
      TITLE, XLABEL, YLABEL},
}
for op, entries in pairs(DECL) do DECL[op] = options.declare(op, entries) end

local function public(op, impl)
   return function(opts, ...)
      if type(opts) ~= 'table' then error(op .. ': expected a table of options, got ' .. type(opts), 2) end
      opts = DECL[op]:check(opts, 2)
      local r = {pcall(impl, op, opts, ...)}
      if r[1] then return r[2], r[3] end
      if type(r[2]) == 'table' and r[2].msg then error(r[2].msg, 2) end
      error(r[2], 0)
   end
end

local function is_finite(v) return v == v and v ~= math.huge and v ~= -math.huge end

-- a tensor's values as a flat Lua array (row-major) and its shape
local function tensor_values(op, what, t)
   local n = t:numel()
   local buf = ffi.new('double[?]', max(n, 1))
   if C.fnn_copy_to_doubles(t, buf, n) ~= 0 then bad(op, '%s: %s', what, ffi.string(C.fnn_last_error())) end
   local out = {}
   for i = 1, n do out[i] = buf[i - 1] end
   return out, t:shape()
end

-- a Lua array or a 1-d tensor of numbers -> a Lua array
local function numbers(op, what, v)
   if fnn_tensor.is_tensor(v) then
      if v:dim() ~= 1 then bad(op, '%s must be a 1-d tensor, got %s', what, fnn_tensor.shape_str(v)) end
      return (tensor_values(op, what, v))
   end
   if type(v) ~= 'table' then bad(op, '%s must be an array or a 1-d tensor, got %s', what, type(v)) end
   local out = {}
   for i = 1, #v do
      if type(v[i]) ~= 'number' then bad(op, '%s[%d] is a %s, expected a number', what, i, type(v[i])) end
      out[i] = v[i]
   end
   return out
end

local function check_path(op, opts)
   if type(opts.path) ~= 'string' or opts.path == '' then bad(op, 'no path given (path = "file.png")') end
end

local function size_opt(op, opts, key, default)
   local v = opts[key] or default
   if type(v) ~= 'number' or v ~= floor(v) or v < 1 then bad(op, '%s must be a positive whole number, got %s', key, tostring(v)) end
   return v
end

local function save(op, cv, path)
   local ok, err = cv:write(path)
   if not ok then bad(op, '%s', err) end
   return path
end

---------------------------------------------------------------- axes

-- a 1-2-5 step giving about n intervals over span
local function nice_step(span, n)
   local raw = span / n
   local mag = 10 ^ floor(log10(raw))
   local f = raw / mag
   return (f < 1.5 and 1 or f < 3 and 2 or f < 7 and 5 or 10) * mag   -- the nearest nice step (Heckbert)
end

-- tick positions (data units) over lo..hi and their labels
local function linear_ticks(lo, hi, n)
   local step = nice_step(hi - lo, n)
   local decimals = -floor(log10(step) + 1e-9)
   if decimals <= 0 then decimals = 0 end      -- also turns -0 into 0
   local big = max(abs(lo), abs(hi))
   local fmt = ('%%.%df'):format(decimals)
   if big >= 1e6 or decimals > 6 then   -- enough significant digits to tell neighbouring ticks apart
      fmt = ('%%.%dg'):format(max(1, ceil(log10(big / step) + 1e-9) + 1))
   end
   local ticks = {}
   for k = ceil(lo / step - 1e-9), floor(hi / step + 1e-9) do
      local v = k * step
      if abs(v) < step * 1e-9 then v = 0 end
      ticks[#ticks + 1] = {pos = v, label = fmt:format(v)}
   end
   return ticks
end

-- ticks of a log10 axis whose limits lo..hi are exponents
local function log_ticks(lo, hi, n)
   if hi - lo < 1 then      -- under a decade: nice values of the data, placed by their logs
      local ticks = {}
      for _, t in ipairs(linear_ticks(10 ^ lo, 10 ^ hi, n)) do
         if t.pos > 0 then ticks[#ticks + 1] = {pos = log10(t.pos), label = ('%g'):format(t.pos)} end
      end
      return ticks
   end
   local stride = max(1, ceil((hi - lo) / n))
   -- up to three decades also get 2 and 5 times each power
   local steps = hi - lo <= 3 and {1, 2, 5} or {1}
   local ticks = {}
   for k = floor(lo), ceil(hi) do
      for _, m in ipairs(steps) do
         local pos = k + log10(m)
         if k % stride == 0 and pos >= lo and pos <= hi then
            ticks[#ticks + 1] = {pos = pos, label = ('%g'):format(m * 10 ^ k)}
         end
      end
   end
   return ticks
end

-- the ticks an axis over lo..hi gets (about n intervals): {{pos =, label =}, ...}; log: lo and hi
-- are exponents of 10, as on a logy axis
function M.ticks(lo, hi, n, log)
   if type(lo) ~= 'number' or type(hi) ~= 'number' or not (hi > lo) then error('plot.ticks: expected lo < hi', 2) end
   return (log and log_ticks or linear_ticks)(lo, hi, n or 5)
end

-- data limits with a 5% margin (matplotlib's), widened when all values agree
local function limits(lo, hi)
   if lo == hi then
      local d = lo == 0 and 1 or abs(lo) * 0.1
      return lo - d, hi + d
   end
   local m = (hi - lo) * 0.05
   return lo - m, hi + m
end

-- the series of a line or scatter plot, checked; points as {x, y} arrays (y already log10 for logy)
local function read_series(op, opts)
   local series = opts.series
   if type(series) ~= 'table' or #series == 0 then bad(op, 'series must be a non-empty array of {name =, x =, y =}') end
   local out = {}
   for i, s in ipairs(series) do
      if type(s) ~= 'table' then bad(op, 'series[%d] must be a table {name =, x =, y =}', i) end
      if s.y == nil then bad(op, 'series[%d] has no y values', i) end
      local y = numbers(op, ('series[%d].y'):format(i), s.y)
      local x
      if s.x ~= nil then
         x = numbers(op, ('series[%d].x'):format(i), s.x)
         if #x ~= #y then bad(op, 'series[%d] has %d x values and %d y values', i, #x, #y) end
      else
         if op == 'plot.scatter' then bad(op, 'series[%d] has no x values', i) end
         x = {}
         for k = 1, #y do x[k] = k end
      end
      if opts.logy then
         for k = 1, #y do y[k] = y[k] > 0 and log10(y[k]) or 0 / 0 end
      end
      out[i] = {name = s.name ~= nil and tostring(s.name) or ('series ' .. i), x = x, y = y,
                colour = M.palette[(i - 1) % #M.palette + 1]}
   end
   return out
end

-- the frame, grid, ticks and labels of an x-y plot; returns the plot area and the mapping to pixels
local function draw_axes(op, cv, opts, series)
   local xlo, xhi, ylo, yhi = math.huge, -math.huge, math.huge, -math.huge
   for _, s in ipairs(series) do
      for k = 1, #s.x do
         local x, y = s.x[k], s.y[k]
         if is_finite(x) and is_finite(y) then
            xlo, xhi, ylo, yhi = min(xlo, x), max(xhi, x), min(ylo, y), max(yhi, y)
         end
      end
   end
   if xlo > xhi then xlo, xhi, ylo, yhi = 0, 1, 0, 1 end   -- nothing finite: empty axes
   xlo, xhi = limits(xlo, xhi)
   ylo, yhi = limits(ylo, yhi)
   local W, H = cv.w, cv.h
   local xticks = linear_ticks(xlo, xhi, max(2, floor(W / 90)))
   local yticks = (opts.logy and log_ticks or linear_ticks)(ylo, yhi, max(2, floor(H / 60)))
   local ylabel_w = 0
   for _, t in ipairs(yticks) do ylabel_w = max(ylabel_w, font.text_width(t.label)) end
   local top = opts.title and (10 + 2 * FH + 10) or 14
   local left = 8 + (opts.ylabel and FH + 8 or 0) + ylabel_w + 4 + 4
   local bottom = 4 + 4 + FH + (opts.xlabel and 8 + FH or 0) + 10
   local last = xticks[#xticks]
   local right = max(16, last and floor(font.text_width(last.label) / 2) + 4 or 0)
   local area = {x0 = left, y0 = top, x1 = W - 1 - right, y1 = H - 1 - bottom}
   if area.x1 - area.x0 < 20 or area.y1 - area.y0 < 20 then
      bad(op, 'a %dx%d picture leaves no room for the plot (make width or height larger)', W, H)
   end
   local function px(x) return area.x0 + (x - xlo) / (xhi - xlo) * (area.x1 - area.x0) end
   local function py(y) return area.y1 - (y - ylo) / (yhi - ylo) * (area.y1 - area.y0) end
   -- grid and ticks
   for _, t in ipairs(xticks) do
      local x = floor(px(t.pos) + 0.5)
      cv:rect(x, area.y0 + 1, x, area.y1 - 1, GRID)
      cv:rect(x, area.y1 + 1, x, area.y1 + 4, INK)
      cv:text(x - floor(font.text_width(t.label) / 2), area.y1 + 8, t.label, INK)
   end
   for _, t in ipairs(yticks) do
      local y = floor(py(t.pos) + 0.5)
      cv:rect(area.x0 + 1, y, area.x1 - 1, y, GRID)
      cv:rect(area.x0 - 4, y, area.x0 - 1, y, INK)
      cv:text(area.x0 - 8 - font.text_width(t.label), y - floor(FH / 2), t.label, INK)
   end
   cv:frame(area.x0, area.y0, area.x1, area.y1, INK)
   -- labels
   if opts.title then
      local s = tostring(opts.title)
      cv:text(floor((area.x0 + area.x1 - font.text_width(s, 2)) / 2), 10, s, INK, 2)
   end
   if opts.xlabel then
      local s = tostring(opts.xlabel)
      cv:text(floor((area.x0 + area.x1 - font.text_width(s)) / 2), area.y1 + 8 + FH + 8, s, INK)
   end
   if opts.ylabel then
      local s = tostring(opts.ylabel)
      cv:text_up(8, floor((area.y0 + area.y1 - font.text_width(s)) / 2), s, INK)
   end
   return area, px, py
end

---------------------------------------------------------------- legend

local LEGEND_CORNERS = {'upper right', 'upper left', 'lower left', 'lower right'}

-- the legend box at a corner of the area: 'best' takes the corner covering the fewest points
local function legend_box(op, opts, area, series, px, py)
   local where = opts.legend
   if where == false then return nil end
   where = where or 'best'
   local text_w = 0
   for _, s in ipairs(series) do text_w = max(text_w, font.text_width(s.name)) end
   local bw, bh = 6 + 18 + 6 + text_w + 6, 4 + #series * (FH + 5) + 1
   local function at(corner)
      local x0 = corner:match('right') and area.x1 - 6 - bw or area.x0 + 6
      local y0 = corner:match('upper') and area.y0 + 6 or area.y1 - 6 - bh
      return {x0 = x0, y0 = y0, x1 = x0 + bw, y1 = y0 + bh}
   end
   if where ~= 'best' then
      for _, c in ipairs(LEGEND_CORNERS) do if c == where then return at(c) end end
      bad(op, "legend must be 'best', %s or false, got %s", "'" .. table.concat(LEGEND_CORNERS, "', '") .. "'",
          tostring(where))
   end
   local best, fewest = nil, math.huge
   for _, c in ipairs(LEGEND_CORNERS) do
      local box, count = at(c), 0
      for _, s in ipairs(series) do
         for k = 1, #s.x do
            -- the points and the midpoints of segments, so a line crossing the box counts too
            for _, f in ipairs{0, 0.5} do
               local j = k + (f > 0 and 1 or 0)
               local xa, ya, xb, yb = s.x[k], s.y[k], s.x[j], s.y[j]
               if xb and is_finite(xa) and is_finite(ya) and is_finite(xb) and is_finite(yb) then
                  local x, y = px(xa + f * (xb - xa)), py(ya + f * (yb - ya))
                  if x >= box.x0 and x <= box.x1 and y >= box.y0 and y <= box.y1 then count = count + 1 end
               end
            end
         end
      end
      if count < fewest then best, fewest = box, count end
   end
   return best
end

local function draw_legend(cv, box, series, marker)
   cv:rect(box.x0, box.y0, box.x1, box.y1, WHITE)
   cv:frame(box.x0, box.y0, box.x1, box.y1, {204, 204, 204})
   for i, s in ipairs(series) do
      local y = box.y0 + 4 + (i - 1) * (FH + 5)
      local mid = y + floor(FH / 2)
      if marker then cv:disc(box.x0 + 15, mid, 3, s.colour)
      else cv:rect(box.x0 + 6, mid - 1, box.x0 + 23, mid + 1, s.colour) end
      cv:text(box.x0 + 30, y, s.name, INK)
   end
end

---------------------------------------------------------------- line and scatter

local function xy_plot(op, opts, marker)
   check_path(op, opts)
   local W, H = size_opt(op, opts, 'width', 640), size_opt(op, opts, 'height', 400)
   local series = read_series(op, opts)
   local cv = canvas.new(W, H, WHITE)
   local area, px, py = draw_axes(op, cv, opts, series)
   cv:clip(area.x0 + 1, area.y0 + 1, area.x1 - 1, area.y1 - 1)
   for _, s in ipairs(series) do
      local prev        -- the last finite point, in pixels; nil after a gap
      local n = #s.x
      for k = 1, n do
         local x, y = s.x[k], s.y[k]
         if is_finite(x) and is_finite(y) then
            local cx, cy = px(x), py(y)
            if marker then cv:disc(cx, cy, 3, s.colour)
            elseif prev then cv:line(prev[1], prev[2], cx, cy, s.colour, 2)
            else
               -- a point with no finite neighbour on either side would not show as a line
               local nx, ny = s.x[k + 1], s.y[k + 1]
               if not (nx and is_finite(nx) and is_finite(ny)) then cv:disc(cx, cy, 1.5, s.colour) end
            end
            prev = {cx, cy}
         else
            prev = nil
         end
      end
   end
   cv:no_clip()
   local box = legend_box(op, opts, area, series, px, py)
   if box then draw_legend(cv, box, series, marker) end
   return save(op, cv, opts.path), {area = area, legend = box}
end

M.line = public('plot.line', function(op, opts) return xy_plot(op, opts, false) end)
M.scatter = public('plot.scatter', function(op, opts) return xy_plot(op, opts, true) end)

---------------------------------------------------------------- image grid

-- a range option {lo, hi}, or nil
local function range_opt(op, opts)
   local r = opts.range
   if r == nil then return nil end
   if type(r) ~= 'table' or type(r[1]) ~= 'number' or type(r[2]) ~= 'number' or not (r[2] > r[1]) then
      bad(op, 'range must be {lo, hi} with lo < hi')
   end
   return r[1], r[2]
end

M.image_grid = public('plot.image_grid', function(op, opts)
   check_path(op, opts)
   local images = opts.images
   if not fnn_tensor.is_tensor(images) then bad(op, 'images must be a tensor [N,H,W], [N,1,H,W] or [N,3,H,W]') end
   local shape = images:shape()
   local n, ch, h, w
   if #shape == 3 then n, ch, h, w = shape[1], 1, shape[2], shape[3]
   elseif #shape == 4 and (shape[2] == 1 or shape[2] == 3) then n, ch, h, w = shape[1], shape[2], shape[3], shape[4]
   else bad(op, 'images must be [N,H,W], [N,1,H,W] or [N,3,H,W], got %s', fnn_tensor.shape_str(images)) end
   if n == 0 or h == 0 or w == 0 then bad(op, 'images %s hold no pixels', fnn_tensor.shape_str(images)) end
   local nrow, scale = size_opt(op, opts, 'nrow', 8), size_opt(op, opts, 'scale', 1)
   local pad = opts.padding or 2
   if type(pad) ~= 'number' or pad < 0 or pad ~= floor(pad) then bad(op, 'padding must be a whole number >= 0') end
   local pad_value = opts.pad_value or 1
   local vals = tensor_values(op, 'images', images)
   local lo, hi = range_opt(op, opts)
   if not lo then
      lo, hi = math.huge, -math.huge
      for i = 1, #vals do
         local v = vals[i]
         if is_finite(v) then lo, hi = min(lo, v), max(hi, v) end
      end
      if lo > hi then lo, hi = 0, 1 end
   end
   local span = max(hi - lo, 1e-5)       -- torchvision's guard for a constant batch
   local function byte(v)
      if v ~= v then return 0 end
      local b = floor((v - lo) / span * 255 + 0.5)
      return b < 0 and 0 or (b > 255 and 255 or b)
   end
   local cols, rows = min(nrow, n), ceil(n / nrow)
   local cw, chh = w * scale + pad, h * scale + pad
   local top = opts.title and (8 + 2 * FH + 8) or 0
   local W, H = cols * cw + pad, top + rows * chh + pad
   if opts.title then W = max(W, font.text_width(tostring(opts.title), 2) + 16) end
   local grey = byte(lo + pad_value * span)
   local cv = canvas.new(W, H, opts.title and WHITE or {grey, grey, grey})
   if opts.title then
      cv:rect(0, top, W - 1, H - 1, {grey, grey, grey})
      local t = tostring(opts.title)
      cv:text(floor((W - font.text_width(t, 2)) / 2), 8, t, INK, 2)
   end
   local buf, plane = cv.buf, h * w
   for k = 0, n - 1 do
      local x0 = pad + (k % nrow) * cw
      local y0 = top + pad + floor(k / nrow) * chh
      local base = k * ch * plane
      for y = 0, h - 1 do
         for x = 0, w - 1 do
            local r = byte(vals[base + y * w + x + 1])
            local g, b = r, r
            if ch == 3 then g, b = byte(vals[base + plane + y * w + x + 1]), byte(vals[base + 2 * plane + y * w + x + 1]) end
            for dy = 0, scale - 1 do
               local i = ((y0 + y * scale + dy) * W + x0 + x * scale) * 3
               for _ = 1, scale do
                  buf[i], buf[i + 1], buf[i + 2] = r, g, b
                  i = i + 3
               end
            end
         end
      end
   end
   return save(op, cv, opts.path), {top = top, padding = pad, cell_w = w * scale, cell_h = h * scale}
end)

---------------------------------------------------------------- heat map

-- matplotlib's viridis at nine evenly spaced points, interpolated linearly
local VIRIDIS = {{68, 1, 84}, {71, 44, 122}, {59, 82, 139}, {44, 113, 142}, {33, 145, 140},
                 {39, 173, 129}, {94, 201, 98}, {170, 220, 50}, {253, 231, 37}}
function M.colormap(t)
   t = t < 0 and 0 or (t > 1 and 1 or t)
   local f = t * (#VIRIDIS - 1)
   local i = min(floor(f), #VIRIDIS - 2)
   local a, b, u = VIRIDIS[i + 1], VIRIDIS[i + 2], f - i
   return {floor(a[1] + (b[1] - a[1]) * u + 0.5), floor(a[2] + (b[2] - a[2]) * u + 0.5),
           floor(a[3] + (b[3] - a[3]) * u + 0.5)}
end

-- the matrix as rows of numbers
local function read_matrix(op, m)
   if fnn_tensor.is_tensor(m) then
      if m:dim() ~= 2 then bad(op, 'matrix must be a 2-d tensor [R,C], got %s', fnn_tensor.shape_str(m)) end
      local vals, shape = tensor_values(op, 'matrix', m)
      local rows = {}
      for r = 1, shape[1] do
         rows[r] = {}
         for c = 1, shape[2] do rows[r][c] = vals[(r - 1) * shape[2] + c] end
      end
      return rows, shape[1], shape[2]
   end
   if type(m) ~= 'table' or #m == 0 then bad(op, 'matrix must be a tensor [R,C] or a non-empty table of rows') end
   local rows = {}
   for r = 1, #m do
      rows[r] = numbers(op, ('matrix[%d]'):format(r), m[r])
      if #rows[r] ~= #rows[1] then bad(op, 'matrix row %d has %d values, row 1 has %d', r, #rows[r], #rows[1]) end
   end
   return rows, #rows, #rows[1]
end

local function labels_opt(op, opts, key, n)
   local l = opts[key]
   if l == nil then return nil end
   if type(l) ~= 'table' or #l ~= n then bad(op, '%s must be an array of %d labels', key, n) end
   local out = {}
   for i = 1, n do out[i] = tostring(l[i]) end
   return out
end

M.heatmap = public('plot.heatmap', function(op, opts)
   check_path(op, opts)
   local rows, R, Cn = read_matrix(op, opts.matrix)
   if Cn == 0 then bad(op, 'matrix has no columns') end
   local row_labels, col_labels = labels_opt(op, opts, 'row_labels', R), labels_opt(op, opts, 'col_labels', Cn)
   local cell = size_opt(op, opts, 'cell', max(10, min(48, floor(min(480 / Cn, 400 / R)))))
   local lo, hi = range_opt(op, opts)
   local integral = true
   if not lo then
      lo, hi = math.huge, -math.huge
      for r = 1, R do for c = 1, Cn do
         local v = rows[r][c]
         if is_finite(v) then lo, hi = min(lo, v), max(hi, v) end
      end end
      if lo > hi then lo, hi = 0, 1 end
      if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
   end
   for r = 1, R do for c = 1, Cn do
      local v = rows[r][c]
      if is_finite(v) and v ~= floor(v) then integral = false end
   end end
   -- layout, left to right: ylabel, row labels, cells, colour bar and its labels
   local row_w = 0
   for _, l in ipairs(row_labels or {}) do row_w = max(row_w, font.text_width(l)) end
   local col_w = 0
   for _, l in ipairs(col_labels or {}) do col_w = max(col_w, font.text_width(l)) end
   local col_up = col_w > cell - 2            -- labels wider than a cell are written upwards
   local top = opts.title and (10 + 2 * FH + 10) or 10
   local x0 = 8 + (opts.ylabel and FH + 8 or 0) + (row_labels and row_w + 6 or 0)
   local gx1 = x0 + Cn * cell - 1
   local gy1 = top + R * cell - 1
   local bar_x = gx1 + 14
   local bar_ticks = linear_ticks(lo, hi, max(3, floor(R * cell / 40)))
   local tick_w = 0
   for _, t in ipairs(bar_ticks) do tick_w = max(tick_w, font.text_width(t.label)) end
   local W = bar_x + 14 + 6 + tick_w + 10
   local below = (col_labels and (col_up and col_w or FH) + 6 or 0) + (opts.xlabel and FH + 8 or 0)
   local H = gy1 + 1 + below + 10
   if opts.title then W = max(W, x0 + font.text_width(tostring(opts.title), 2) + 10) end
   local cv = canvas.new(W, H, WHITE)
   local function norm(v) return (v - lo) / (hi - lo) end
   local function fmt(v)
      if integral then return ('%d'):format(v) end
      return abs(v) < 10 and ('%.2f'):format(v) or ('%.3g'):format(v)
   end
   for r = 1, R do
      for c = 1, Cn do
         local v = rows[r][c]
         local cx, cy = x0 + (c - 1) * cell, top + (r - 1) * cell
         local colour = is_finite(v) and M.colormap(norm(v)) or {200, 200, 200}
         cv:rect(cx, cy, cx + cell - 1, cy + cell - 1, colour)
         if opts.annotate ~= false and is_finite(v) then
            local s = fmt(v)
            local tw = font.text_width(s)
            if tw <= cell - 4 and FH <= cell - 4 then
               cv:text(cx + floor((cell - tw) / 2), cy + floor((cell - FH) / 2), s, norm(v) < 0.5 and WHITE or BLACK)
            end
         end
      end
   end
   if row_labels then
      for r, l in ipairs(row_labels) do
         cv:text(x0 - 6 - font.text_width(l), top + (r - 1) * cell + floor((cell - FH) / 2), l, INK)
      end
   end
   if col_labels then
      for c, l in ipairs(col_labels) do
         local cx = x0 + (c - 1) * cell
         if col_up then cv:text_up(cx + floor((cell - FH) / 2), gy1 + 6 + col_w - font.text_width(l), l, INK)
         else cv:text(cx + floor((cell - font.text_width(l)) / 2), gy1 + 6, l, INK) end
      end
   end
   -- the colour bar: value hi at the top, lo at the bottom
   for y = top, gy1 do
      cv:rect(bar_x, y, bar_x + 13, y, M.colormap(1 - (y - top) / max(1, gy1 - top)))
   end
   cv:frame(bar_x, top, bar_x + 13, gy1, INK)
   for _, t in ipairs(bar_ticks) do
      local y = floor(gy1 - norm(t.pos) * (gy1 - top) + 0.5)
      cv:rect(bar_x + 14, y, bar_x + 17, y, INK)
      cv:text(bar_x + 20, y - floor(FH / 2), t.label, INK)
   end
   if opts.title then
      local s = tostring(opts.title)
      cv:text(max(4, floor((x0 + gx1 - font.text_width(s, 2)) / 2)), 10, s, INK, 2)
   end
   if opts.xlabel then
      local s = tostring(opts.xlabel)
      cv:text(floor((x0 + gx1 - font.text_width(s)) / 2), H - 10 - FH, s, INK)
   end
   if opts.ylabel then
      local s = tostring(opts.ylabel)
      cv:text_up(8, floor((top + gy1 - font.text_width(s)) / 2), s, INK)
   end
   return save(op, cv, opts.path), {cells = {x0 = x0, y0 = top, size = cell, rows = R, cols = Cn},
                                    colorbar = {x0 = bar_x, y0 = top, x1 = bar_x + 13, y1 = gy1}}
end)

---------------------------------------------------------------- reading back

-- a PNG file's pixels: {width =, height =, channels =, pixels = uint8_t[w * h * c] (rows top first)},
-- or an error naming plot.read_png (not a PNG, truncated, cannot open)
M.read_png = function(path)
   if type(path) ~= 'string' then error('plot.read_png: expected a path, got ' .. type(path), 2) end
   local wh = ffi.new('int[3]')
   if C.fnn_png_read(path, wh, wh + 1, wh + 2, nil, 0) ~= 0 then
      error('plot.read_png: ' .. ffi.string(C.fnn_last_error()), 2)
   end
   local n = wh[0] * wh[1] * wh[2]
   local pixels = ffi.new('uint8_t[?]', n)
   if C.fnn_png_read(path, wh, wh + 1, wh + 2, pixels, n) ~= 0 then
      error('plot.read_png: ' .. ffi.string(C.fnn_last_error()), 2)
   end
   return {width = wh[0], height = wh[1], channels = wh[2], pixels = pixels}
end

return M
