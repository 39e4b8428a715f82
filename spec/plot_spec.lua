-- fastnn.plot: PNG pictures through libpng, read back through core/io/png.c and checked pixel by pixel.
local fnn = require 'fastnn'
local plot = require 'fastnn.plot'
local support = require 'spec.support'

local BLUE, ORANGE = {31, 119, 180}, {255, 127, 14}   -- tab10's first two colours
local INK = {34, 34, 34}

-- every picture goes to a fresh directory, removed at the end
local dir = os.tmpname()
os.remove(dir)
os.execute('mkdir -p ' .. dir)
teardown(function() os.execute('rm -rf ' .. dir) end)
local function tmp(name) return dir .. '/' .. name end

local function px(img, x, y)
   local i = (y * img.width + x) * img.channels
   return img.pixels[i], img.pixels[i + 1], img.pixels[i + 2]
end
local function is(img, x, y, c)
   local r, g, b = px(img, x, y)
   return r == c[1] and g == c[2] and b == c[3]
end
-- pixels of exactly colour c in the inclusive box
local function count(img, x0, y0, x1, y1, c)
   local n = 0
   for y = math.max(0, y0), math.min(img.height - 1, y1) do
      for x = math.max(0, x0), math.min(img.width - 1, x1) do
         if is(img, x, y, c) then n = n + 1 end
      end
   end
   return n
end
local function signature(path)
   local f = assert(io.open(path, 'rb'))
   local s = f:read(8)
   f:close()
   return s
end
local function range(n, f) local t = {} for i = 1, n do t[i] = f(i) end return t end

describe('plot.ticks', function()
   local function positions(t) local p = {} for i, v in ipairs(t) do p[i] = v.pos end return p end
   local function labels(t) local p = {} for i, v in ipairs(t) do p[i] = v.label end return p end
   it('steps by 1, 2 or 5 times a power of ten', function()
      support.approx({0, 0.5, 1, 1.5, 2, 2.5}, positions(plot.ticks(-0.1, 2.7, 5)), 1e-12)
      assert.same({'0.0', '0.5', '1.0', '1.5', '2.0', '2.5'}, labels(plot.ticks(-0.1, 2.7, 5)))
      assert.same({'0', '20', '40', '60', '80', '100'}, labels(plot.ticks(-3, 104, 5)))
      assert.same({'-0.002', '0.000', '0.002'}, labels(plot.ticks(-0.003, 0.003, 3)))
      assert.same({'0', '10000', '20000', '30000'}, labels(plot.ticks(0, 30000, 3)))
   end)
   it('puts log ticks at powers of ten, with 2 and 5 over a few decades', function()
      assert.same({'0.01', '0.02', '0.05', '0.1', '0.2', '0.5', '1'}, labels(plot.ticks(-2, 0, 5, true)))
      assert.same({'1e-08', '0.0001', '1'}, labels(plot.ticks(-9, 1, 3, true)))
      support.approx({-8, -4, 0}, positions(plot.ticks(-9, 1, 3, true)), 1e-12)
   end)
end)

describe('plot.line', function()
   it('writes a PNG of the asked size with the series where the data is', function()
      local path = tmp('rising.png')
      local ret, info = plot.line{path = path, width = 320, height = 240, title = 'loss', xlabel = 'step',
                                  ylabel = 'loss', legend = 'lower right',
                                  series = {{name = 'train', y = range(20, function(i) return i end)},
                                            {name = 'validation', y = range(20, function(i) return i + 0.5 end)}}}
      assert.equals(path, ret)
      assert.equals('\137PNG\r\n\26\n', signature(path))
      local img = plot.read_png(path)
      assert.same({320, 240, 3}, {img.width, img.height, img.channels})
      local a = info.area
      -- the frame is where the layout says
      assert.is_true(is(img, a.x0, math.floor((a.y0 + a.y1) / 2), INK))
      assert.is_true(is(img, math.floor((a.x0 + a.x1) / 2), a.y1, INK))
      local qw, qh = math.floor((a.x1 - a.x0) / 4), math.floor((a.y1 - a.y0) / 4)
      assert.is_true(count(img, a.x0, a.y1 - qh, a.x0 + qw, a.y1, BLUE) > 10, 'rising series at the bottom left')
      assert.is_true(count(img, a.x1 - qw, a.y0, a.x1, a.y0 + qh, BLUE) > 10, 'rising series at the top right')
      assert.equals(0, count(img, a.x0, a.y0, a.x0 + qw, a.y0 + qh, BLUE))
      assert.equals(0, count(img, a.x0, a.y0, a.x0 + qw, a.y0 + qh, ORANGE))
      -- the legend box at the lower right holds both colours
      local l = info.legend
      assert.is_true(l.x0 > (a.x0 + a.x1) / 2 and l.y0 > (a.y0 + a.y1) / 2)
      assert.is_true(count(img, l.x0, l.y0, l.x1, l.y1, BLUE) > 5)
      assert.is_true(count(img, l.x0, l.y0, l.x1, l.y1, ORANGE) > 5)
      -- the title is drawn above the plot area
      local dark = 0
      for y = 0, a.y0 - 2 do for x = 0, img.width - 1 do
         local r = px(img, x, y)
         if r < 100 then dark = dark + 1 end
      end end
      assert.is_true(dark > 20)
   end)

   it("puts the 'best' legend in a corner free of data", function()
      local rising = range(30, function(i) return i * i end)
      local _, info = plot.line{path = tmp('best.png'), width = 320, height = 240, series = {{name = 'a', y = rising}}}
      local a, l = info.area, info.legend
      assert.is_true(l.x1 < (a.x0 + a.x1) / 2 and l.y1 < (a.y0 + a.y1) / 2, 'upper left is empty')
      local _, info2 = plot.line{path = tmp('best2.png'), width = 320, height = 240,
                                 series = {{name = 'a', y = range(30, function(i) return -i end)}}}
      assert.is_true(info2.legend.x0 > (a.x0 + a.x1) / 2 and info2.legend.y0 < (a.y0 + a.y1) / 2, 'upper right is empty')
      local _, info3 = plot.line{path = tmp('nolegend.png'), legend = false, series = {{y = {1, 2}}}}
      assert.is_nil(info3.legend)
   end)

   it('maps the middle of a straight line to the middle of the area, also on a log axis', function()
      for _, logy in ipairs{false, true} do
         local path = tmp('straight.png')
         local y = range(5, function(i) return logy and 10 ^ i or i end)
         local _, info = plot.line{path = path, width = 301, height = 201, logy = logy, series = {{y = y}}}
         local img = plot.read_png(path)
         local a = info.area
         local cx, cy = (a.x0 + a.x1) / 2, (a.y0 + a.y1) / 2
         local hits = count(img, math.floor(cx), math.floor(cy), math.ceil(cx), math.ceil(cy), BLUE)
         assert.is_true(hits >= 1, 'logy=' .. tostring(logy))
      end
   end)

   it('skips NaN and inf points: the line breaks there and the axes stay finite', function()
      local path = tmp('gaps.png')
      local y = {1, 2, 3, 0 / 0, 5, 6, math.huge, 8, 9, 10}
      local x = fnn.tensor(range(10, function(i) return i end))
      local _, info = plot.line{path = path, width = 320, height = 240, legend = false, series = {{x = x, y = fnn.tensor(y)}}}
      local img = plot.read_png(path)
      local a = info.area
      -- x runs 1..10 with a 5% margin each side: the pixel column of x
      local function col(v) return a.x0 + (v - 0.55) / 9.9 * (a.x1 - a.x0) end
      for _, gap in ipairs{4, 7} do
         assert.equals(0, count(img, math.floor(col(gap)) - 2, a.y0, math.ceil(col(gap)) + 2, a.y1, BLUE))
      end
      assert.is_true(count(img, math.floor(col(1.5)), a.y0, math.ceil(col(1.5)), a.y1, BLUE) > 0)
      assert.is_true(count(img, math.floor(col(9.5)), a.y0, math.ceil(col(9.5)), a.y1, BLUE) > 0)
      -- the last finite point (10) is at the top, not squashed by the inf
      assert.is_true(count(img, a.x1 - 20, a.y0, a.x1, a.y0 + 20, BLUE) > 0)
      -- a series with no finite point leaves empty axes
      _, info = plot.line{path = path, width = 200, height = 150, legend = false, series = {{y = {0 / 0, math.huge}}}}
      img = plot.read_png(path)
      assert.equals(0, count(img, 0, 0, img.width - 1, img.height - 1, BLUE))
      assert.is_true(is(img, info.area.x0, info.area.y0, INK))
   end)

   it('raises errors naming plot.line at the caller', function()
      local function err(opts) return support.err_of(function() plot.line(opts) end) end
      assert.matches('plot_spec%.lua:%d+: plot%.line: no path given', err{series = {{y = {1}}}})
      assert.matches('plot%.line: series must be a non%-empty array', err{path = tmp('e.png'), series = {}})
      assert.matches('plot%.line: series%[1%] has 3 x values and 2 y values',
                     err{path = tmp('e.png'), series = {{x = {1, 2, 3}, y = {1, 2}}}})
      assert.matches('plot%.line: series%[2%]%.y must be a 1%-d tensor, got %[2,2%]',
                     err{path = tmp('e.png'), series = {{y = {1}}, {y = fnn.ones(2, 2)}}})
      assert.matches('plot%.line: series%[1%]%.y%[2%] is a string',
                     err{path = tmp('e.png'), series = {{y = {1, 'a'}}}})
      assert.matches("plot%.line: legend must be 'best'", err{path = tmp('e.png'), legend = 'middle', series = {{y = {1}}}})
      assert.matches('plot%.line: png: cannot open /nonexistent[%w_/]*/x%.png for writing',
                     err{path = '/nonexistent_dir_fastnn/x.png', series = {{y = {1, 2}}}})
      assert.matches('plot%.line: expected a table of options', support.err_of(function() plot.line('x.png') end))
      assert.matches('plot%.line: a 30x30 picture leaves no room',
                     err{path = tmp('e.png'), width = 30, height = 30, series = {{y = {1, 2}}}})
   end)
end)

describe('plot.scatter', function()
   it('draws each point at its place, from arrays or tensors', function()
      local path = tmp('scatter.png')
      local _, info = plot.scatter{path = path, width = 300, height = 300, legend = 'lower right',
                                   series = {{name = 'a', x = {0, 5, 10}, y = fnn.tensor{0, 5, 10}},
                                             {name = 'b', x = fnn.tensor{0}, y = {10}}}}
      local img = plot.read_png(path)
      assert.same({300, 300}, {img.width, img.height})
      local a = info.area
      local function at(x, y)     -- limits -0.5..10.5 on both axes
         return math.floor(a.x0 + (x + 0.5) / 11 * (a.x1 - a.x0) + 0.5), math.floor(a.y1 - (y + 0.5) / 11 * (a.y1 - a.y0) + 0.5)
      end
      for _, p in ipairs{{0, 0}, {5, 5}, {10, 10}} do
         local x, y = at(p[1], p[2])
         assert.is_true(count(img, x - 1, y - 1, x + 1, y + 1, BLUE) >= 4)
      end
      local x, y = at(0, 10)
      assert.is_true(count(img, x - 1, y - 1, x + 1, y + 1, ORANGE) >= 4)
      x, y = at(10, 0)
      assert.equals(0, count(img, x - 4, y - 20, x + 4, y + 4, BLUE))
   end)

   it('needs x values', function()
      assert.matches('plot_spec%.lua:%d+: plot%.scatter: series%[1%] has no x values',
                     support.err_of(function() plot.scatter{path = tmp('e.png'), series = {{y = {1}}}} end))
   end)
end)

describe('plot.image_grid', function()
   it('reproduces grey levels at the documented positions', function()
      local path = tmp('grid.png')
      -- 3 images of 2x3, values 0..17: the default range maps 0 to black and 17 to white
      local imgs = support.seq({3, 2, 3}) - 1
      local ret, info = plot.image_grid{path = path, images = imgs, nrow = 2}
      assert.equals(path, ret)
      local img = plot.read_png(path)
      -- 2 images a row, padding 2: width 2 * (3 + 2) + 2, height 2 * (2 + 2) + 2
      assert.same({12, 10, 3}, {img.width, img.height, img.channels})
      assert.equals(0, info.top)
      for k = 0, 2 do
         local x0, y0 = 2 + (k % 2) * 5, 2 + math.floor(k / 2) * 4
         for y = 0, 1 do for x = 0, 2 do
            local v = k * 6 + y * 3 + x
            local grey = math.floor(v / 17 * 255 + 0.5)
            assert.same({grey, grey, grey}, {px(img, x0 + x, y0 + y)})
         end end
      end
      -- the padding and the empty fourth slot are white (pad_value 1)
      assert.same({255, 255, 255}, {px(img, 0, 0)})
      assert.same({255, 255, 255}, {px(img, 8, 6)})
   end)

   it('scales, clamps to range and keeps colour channels', function()
      local path = tmp('grid_rgb.png')
      -- one 1x2 RGB image: pixel 1 = (0, 0.5, 1), pixel 2 = (-1, 2, 0.25); range {0, 1} clamps
      local im = fnn.tensor({0, -1, 0.5, 2, 1, 0.25}, {1, 3, 1, 2})
      plot.image_grid{path = path, images = im, scale = 2, padding = 0, range = {0, 1}}
      local img = plot.read_png(path)
      assert.same({4, 2}, {img.width, img.height})
      for y = 0, 1 do
         for x = 0, 1 do assert.same({0, 128, 255}, {px(img, x, y)}) end
         for x = 2, 3 do assert.same({0, 255, 64}, {px(img, x, y)}) end
      end
      -- [N,1,H,W] is the same picture as [N,H,W]
      local g = fnn.rand(2, 4, 5)
      plot.image_grid{path = tmp('g3.png'), images = g}
      plot.image_grid{path = tmp('g4.png'), images = g:reshape(2, 1, 4, 5)}
      local a, b = plot.read_png(tmp('g3.png')), plot.read_png(tmp('g4.png'))
      assert.same({a.width, a.height}, {b.width, b.height})
      for i = 0, a.width * a.height * 3 - 1 do assert.equals(a.pixels[i], b.pixels[i]) end
   end)

   it('puts a title above the grid', function()
      local _, info = plot.image_grid{path = tmp('titled.png'), images = fnn.zeros(2, 4, 4), title = 'samples'}
      local img = plot.read_png(tmp('titled.png'))
      assert.is_true(info.top > 14)
      assert.same({0, 0, 0}, {px(img, 2, info.top + 2)})       -- a constant batch maps to black
      assert.is_true(count(img, 0, 0, img.width - 1, info.top - 1, INK) > 20)
   end)

   it('raises errors naming plot.image_grid', function()
      local function err(opts) return support.err_of(function() plot.image_grid(opts) end) end
      assert.matches('plot_spec%.lua:%d+: plot%.image_grid: images must be %[N,H,W%], %[N,1,H,W%] or %[N,3,H,W%], got %[2,3%]',
                     err{path = tmp('e.png'), images = fnn.ones(2, 3)})
      assert.matches('got %[2,2,4,4%]', err{path = tmp('e.png'), images = fnn.ones(2, 2, 4, 4)})
      assert.matches('plot%.image_grid: images is a table {1, 2}, expected a tensor', err{path = tmp('e.png'), images = {1, 2}})
      assert.matches('plot%.image_grid: no path given', err{images = fnn.ones(1, 2, 2)})
      assert.matches('plot%.image_grid: range must be {lo, hi}', err{path = tmp('e.png'), images = fnn.ones(1, 2, 2), range = {1, 0}})
      assert.matches('plot%.image_grid: nrow is 0, expected a positive integer', err{path = tmp('e.png'), images = fnn.ones(1, 2, 2), nrow = 0})
   end)
end)

describe('plot.heatmap', function()
   it('colours cells in the order of their values, viridis from end to end', function()
      local path = tmp('heat.png')
      local m = {{3, 0, 5}, {1, 4, 2}}
      local _, info = plot.heatmap{path = path, matrix = m, row_labels = {'a', 'b'}, col_labels = {'x', 'y', 'z'},
                                   title = 'confusion', xlabel = 'predicted', ylabel = 'true'}
      local img = plot.read_png(path)
      local c = info.cells
      assert.same({2, 3}, {c.rows, c.cols})
      local lum = {}
      for r = 1, 2 do for k = 1, 3 do
         local R, G, B = px(img, c.x0 + (k - 1) * c.size + 2, c.y0 + (r - 1) * c.size + 2)
         lum[m[r][k] + 1] = 0.299 * R + 0.587 * G + 0.114 * B
      end end
      for v = 2, 6 do assert.is_true(lum[v] > lum[v - 1], 'value ' .. (v - 1) .. ' brighter than ' .. (v - 2)) end
      -- the smallest value is viridis' dark end, the largest its yellow end (matplotlib's colours)
      assert.same({68, 1, 84}, {px(img, c.x0 + c.size + 2, c.y0 + 2)})
      assert.same({253, 231, 37}, {px(img, c.x0 + 2 * c.size + 2, c.y0 + 2)})
   end)

   it('writes the numbers in the cells when asked', function()
      local m = fnn.tensor{{1, 2}, {3, 4}}
      local function inked(annotate)
         local path = tmp('annot.png')
         local _, info = plot.heatmap{path = path, matrix = m, annotate = annotate, cell = 30}
         local img = plot.read_png(path)
         local c = info.cells
         local bg = {px(img, c.x0 + 1, c.y0 + 1)}
         return c.size * c.size - count(img, c.x0, c.y0, c.x0 + c.size - 1, c.y0 + c.size - 1, bg)
      end
      assert.is_true(inked(true) > 5)
      assert.equals(0, inked(false))
   end)

   it('raises errors naming plot.heatmap', function()
      local function err(opts) return support.err_of(function() plot.heatmap(opts) end) end
      assert.matches('plot_spec%.lua:%d+: plot%.heatmap: matrix must be a 2%-d tensor %[R,C%], got %[4%]',
                     err{path = tmp('e.png'), matrix = fnn.ones(4)})
      assert.matches('plot%.heatmap: matrix row 2 has 1 values, row 1 has 2', err{path = tmp('e.png'), matrix = {{1, 2}, {3}}})
      assert.matches('plot%.heatmap: row_labels must be an array of 2 labels',
                     err{path = tmp('e.png'), matrix = {{1, 2}, {3, 4}}, row_labels = {'a'}})
   end)
end)

describe('the PNG files', function()
   it('are read back through libpng, and bad files are refused with a message', function()
      local good = tmp('good.png')
      plot.line{path = good, width = 120, height = 90, series = {{y = {1, 2}}}}
      local f = assert(io.open(good, 'rb'))
      local bytes = f:read('*a')
      f:close()
      local bad = tmp('bad.png')
      f = assert(io.open(bad, 'wb')); f:write('not a png at all'); f:close()
      assert.matches('plot_spec%.lua:%d+: plot%.read_png: png: .*bad%.png is not a PNG file',
                     support.err_of(function() plot.read_png(bad) end))
      f = assert(io.open(bad, 'wb')); f:write(bytes:sub(1, 60)); f:close()
      assert.matches('plot%.read_png: png: .*bad%.png: libpng: ', support.err_of(function() plot.read_png(bad) end))
      assert.matches('plot%.read_png: png: cannot open .*missing%.png',
                     support.err_of(function() plot.read_png(tmp('missing.png')) end))
   end)

   it('replace an earlier file whole and leave no temporary file', function()
      local path = tmp('replace.png')
      plot.line{path = path, width = 200, height = 100, series = {{y = {1, 2}}}}
      plot.line{path = path, width = 150, height = 120, series = {{y = {1, 2}}}}
      local img = plot.read_png(path)
      assert.same({150, 120}, {img.width, img.height})
      local p = io.popen('ls -a ' .. dir)
      local listing = p:read('*a')
      p:close()
      assert.is_nil(listing:find('%.tmp'))
   end)

   it('is fnn.plot', function()
      assert.equals(plot, fnn.plot)
   end)
end)
