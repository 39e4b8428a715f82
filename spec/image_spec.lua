-- fastnn.image (core/io/image.c): PNG and JPEG from and to disk, resize, crop, hflip, to_gray.
-- Round trips through PNG are exact; the JPEG fixtures (spec/fixtures/image, written by Pillow
-- with tools/make_image_fixtures.py) decode within 1/255 of what libjpeg-turbo gave there. Bad
-- files are loaded in a child process, so a crash shows as one.
local fnn = require 'fastnn'
local ffi = require 'ffi'
local process = require 'spec.process'
local image = fnn.image
local C = require('fastnn.tensor').C

local dir = process.tmpdir()
local function file(name) return dir .. '/' .. name end
teardown(function() os.execute('rm -rf ' .. process.quote(dir)) end)

local function flat(t) return t:to_flat() end   -- the values, row-major

-- the 8-bit levels of a picture in [0, 1], after checking each value is within float rounding of one
local function bytes(t)
   local out = {}
   for i, v in ipairs(flat(t)) do
      out[i] = math.floor(v * 255 + 0.5)
      assert(math.abs(v * 255 - out[i]) < 1e-4, 'not a whole level: ' .. v)
   end
   return out
end

local function near(expected, got, tol)
   assert.equals(#expected, #got)
   for i = 1, #expected do
      if math.abs(expected[i] - got[i]) > tol then
         error(('element %d: expected %.7g, got %.7g (tolerance %g)'):format(i, expected[i], got[i], tol), 2)
      end
   end
end

-- a [c, h, w] picture of whole 8-bit levels, from a deterministic sequence
local function levels(c, h, w, mul)
   local vals = {}
   for i = 1, c * h * w do vals[i] = (i * mul) % 256 end
   local scaled = {}
   for i, v in ipairs(vals) do scaled[i] = v / 255 end
   return fnn.tensor(scaled, {c, h, w}), vals
end

describe('image.load and image.save', function()
   it('round-trips a grey PNG exactly', function()
      local t, vals = levels(1, 5, 7, 37)
      image.save(file('g.png'), t)
      local back = image.load(file('g.png'))
      assert.same({1, 5, 7}, back:shape())
      assert.same(vals, bytes(back))
   end)

   it('round-trips a colour PNG exactly, and a [H, W] tensor as grey', function()
      local t, vals = levels(3, 4, 6, 53)
      image.save(file('c.png'), t)
      local back = image.load(file('c.png'))
      assert.same({3, 4, 6}, back:shape())
      assert.same(vals, bytes(back))
      local g = fnn.tensor({{0, 1}, {0.2, 0.6}})
      image.save(file('hw.png'), g)
      local b2 = image.load(file('hw.png'))
      assert.same({1, 2, 2}, b2:shape())
      assert.same({0, 255, 51, 153}, bytes(b2))
   end)

   it('drops the alpha channel (grey + alpha, RGBA)', function()
      local ga = ffi.new('uint8_t[4]', {10, 255, 200, 0})
      assert.equals(0, C.fnn_png_write(file('ga.png'), 2, 1, 2, ga))
      local t = image.load(file('ga.png'))
      assert.same({1, 1, 2}, t:shape())
      assert.same({10, 200}, bytes(t))
      local rgba = ffi.new('uint8_t[8]', {1, 2, 3, 4, 5, 6, 7, 8})
      assert.equals(0, C.fnn_png_write(file('rgba.png'), 2, 1, 4, rgba))
      local u = image.load(file('rgba.png'))
      assert.same({3, 1, 2}, u:shape())
      assert.same({1, 5, 2, 6, 3, 7}, bytes(u))
   end)

   it('clamps to [0, 1] and rounds to the nearest level when saving', function()
      image.save(file('clamp.png'), fnn.tensor({-0.5, 2, 0.5 / 255 + 1e-4, 1.4 / 255}, {1, 1, 4}))
      assert.same({0, 255, 1, 1}, bytes(image.load(file('clamp.png'))))
   end)

   for _, name in ipairs{'colour', 'grey'} do
      it('decodes ' .. name .. '.jpg (written by Pillow) within 1/255 of libjpeg-turbo\'s pixels', function()
         local ref = dofile('spec/fixtures/image/' .. name .. '_ref.lua')
         local t = image.load('spec/fixtures/image/' .. name .. '.jpg')
         assert.same({ref.channels, ref.height, ref.width}, t:shape())
         local expected = {}      -- the reference is interleaved; the tensor is [C, H, W]
         for k = 0, ref.channels - 1 do
            for p = 0, ref.width * ref.height - 1 do
               expected[#expected + 1] = ref.pixels[p * ref.channels + k + 1] / 255
            end
         end
         near(expected, flat(t), 1 / 255 + 1e-6)
      end)
   end

   it('writes a JPEG that reads back close to the picture, smaller at a lower quality', function()
      local vals = {}
      for k = 0, 2 do for y = 0, 15 do for x = 0, 15 do vals[#vals + 1] = (x * 8 + y * 4 + k * 40) / 255 end end end
      local t = fnn.tensor(vals, {3, 16, 16})
      image.save(file('q.jpg'), t, {quality = 100})
      image.save(file('q10.JPEG'), t, {quality = 10})
      local back = image.load(file('q.jpg'))
      assert.same({3, 16, 16}, back:shape())
      local got, err = flat(back), 0
      for i = 1, #vals do err = err + math.abs(got[i] - vals[i]) end
      assert.is_true(err / #vals < 2 / 255, 'mean error ' .. err / #vals * 255 .. '/255')
      assert.is_true(#process.read_all(file('q10.JPEG')) < #process.read_all(file('q.jpg')))
      image.save(file('gq.jpg'), fnn.full({1, 8, 8}, 0.5))
      assert.same({1, 8, 8}, image.load(file('gq.jpg')):shape())
   end)

   it('refuses what it cannot write, naming the problem', function()
      local t = fnn.zeros(3, 2, 2)
      assert.has_error(function() image.save(file('x.bmp'), t) end)
      local ok, err = pcall(image.save, file('x.bmp'), t)
      assert.matches('image.save: .*x%.bmp: the extension must be %.png, %.jpg or %.jpeg', err)
      ok, err = pcall(image.save, file('x.png'), fnn.zeros(2, 2, 2))
      assert.is_false(ok)
      assert.matches('expected 1 %(grey%) or 3 %(RGB%) channels, got %[2,2,2%]', err)
      ok, err = pcall(image.save, file('x.jpg'), t, {quality = 0})
      assert.is_false(ok)
      assert.matches('quality', err)
      ok, err = pcall(image.load, file('missing.png'))
      assert.is_false(ok)
      assert.matches('image.load: cannot open .*missing%.png', err)
   end)
end)

describe('image.load of a bad file, in a child process', function()
   local LAUNCHER = process.program('fastnn-lua', 'FASTNN_LAUNCHER')

   -- the child loads each path under pcall and prints one line per file: ok or the message
   local function load_in_child(paths)
      local script = file('child.lua')
      process.write_file(script, [[
local fnn = require 'fastnn'
for _, p in ipairs(arg) do
   local ok, err = pcall(fnn.image.load, p)
   io.write(ok and 'loaded' or tostring(err), '\n')
end
]])
      local out = file('child.out')
      local args = {}
      for i, p in ipairs(paths) do args[i] = process.quote(p) end
      local cmd = ('cd %s && env FASTNN_LIB=%s timeout 60 %s %s %s >%s 2>&1; echo $?'):format(
         process.quote(process.cwd), process.quote(process.build_dir() .. '/libfastnn.so'),
         process.quote(LAUNCHER), process.quote(script), table.concat(args, ' '), process.quote(out))
      local p = io.popen(cmd)
      local rc = tonumber(p:read('*a'))
      p:close()
      local lines = {}
      for l in process.read_all(out):gmatch('[^\n]+') do lines[#lines + 1] = l end
      return rc, lines
   end

   it('gives an error naming each file, never a crash', function()
      -- a zero-byte file, a text file named .png, a truncated JPEG, a PNG with a broken CRC, a truncated PNG
      process.write_file(file('empty.png'), '')
      process.write_file(file('text.png'), 'hello, this is not a picture\n')
      local jpeg = process.read_all('spec/fixtures/image/colour.jpg')
      process.write_file(file('half.jpg'), jpeg:sub(1, math.floor(#jpeg / 2)))      -- ends in the header
      process.write_file(file('truncated.jpg'), jpeg:sub(1, #jpeg - 100))           -- ends in the scan
      image.save(file('good.png'), (levels(3, 8, 8, 11)))
      local png = process.read_all(file('good.png'))
      local idat = assert(png:find('IDAT', 1, true))
      local len = png:byte(idat - 4) * 2^24 + png:byte(idat - 3) * 2^16 + png:byte(idat - 2) * 256 + png:byte(idat - 1)
      local pos = idat + 4 + len    -- the first byte of IDAT's CRC: the chunk's data no longer matches it
      local bad = png:sub(1, pos - 1) .. string.char((png:byte(pos) + 1) % 256) .. png:sub(pos + 1)
      process.write_file(file('crc.png'), bad)
      process.write_file(file('short.png'), png:sub(1, #png - 20))
      process.write_file(file('junk.jpg'), '\255\216\255' .. string.rep('x', 100))
      local names = {'empty.png', 'text.png', 'truncated.jpg', 'crc.png', 'short.png', 'junk.jpg', 'half.jpg'}
      local paths = {}
      for i, n in ipairs(names) do paths[i] = file(n) end
      paths[#paths + 1] = file('good.png')
      local rc, lines = load_in_child(paths)
      assert.equals(0, rc, table.concat(lines, '\n'))
      assert.equals(#paths, #lines, table.concat(lines, '\n'))
      for i, n in ipairs(names) do
         assert.matches('image%.load: .*' .. n:gsub('%.', '%%.'), lines[i])
      end
      assert.matches('is empty', lines[1])
      assert.matches('neither a PNG nor a JPEG', lines[2])
      assert.matches('truncated%.jpg: corrupt or truncated JPEG %(TurboJPEG: Premature end of JPEG file%)', lines[3])
      assert.matches('crc%.png: libpng: IDAT: CRC error', lines[4])
      assert.matches('short%.png: libpng: ', lines[5])
      assert.matches('junk%.jpg: not a readable JPEG %(TurboJPEG: ', lines[6])
      assert.matches('half%.jpg: not a readable JPEG %(TurboJPEG: ', lines[7])
      assert.equals('loaded', lines[#lines])
   end)
end)

describe('image.resize', function()
   it('enlarges bilinearly with half-pixel centres, edges clamped', function()
      local t = fnn.tensor({0, 1}, {1, 1, 2})
      near({0, 0.25, 0.75, 1}, flat(image.resize(t, 1, 4)), 1e-6)
      -- the same along the height, channels apart
      local u = fnn.tensor({0, 1, 10, 20}, {2, 2, 1})
      near({0, 0.25, 0.75, 1, 10, 12.5, 17.5, 20}, flat(image.resize(u, 4, 1)), 1e-5)
   end)

   it('shrinks with the triangle filter widened by the scale (antialiased, as Pillow)', function()
      -- 4 -> 2: output 1 centres on 1.0, weights .75 .75 .25 over inputs 1 2 3 (normalised by 1.75)
      local t = fnn.tensor({1, 2, 3, 4}, {1, 1, 4})
      near({3 / 1.75, 5.75 / 1.75}, flat(image.resize(t, 1, 2)), 1e-6)
      -- an even 2x reduction of a constant stays constant
      near({0.5, 0.5, 0.5, 0.5}, flat(image.resize(fnn.full({1, 4, 4}, 0.5), 2, 2)), 1e-6)
   end)

   it('takes one size for the shorter side, keeping the aspect', function()
      assert.same({3, 2, 4}, image.resize(fnn.zeros(3, 4, 8), 2):shape())
      assert.same({1, 6, 3}, image.resize(fnn.zeros(1, 10, 5), 3):shape())
      assert.same({1, 2, 2}, image.resize(fnn.zeros(2, 2), 2, 2):shape())
   end)

   it('refuses a bad size or a non-picture', function()
      assert.has_error(function() image.resize(fnn.zeros(1, 2, 2), 0, 2) end)
      assert.has_error(function() image.resize(fnn.zeros(2), 2, 2) end)
      assert.has_error(function() image.resize('x', 2, 2) end)
   end)
end)

describe('image.crop, hflip, to_gray', function()
   local t = fnn.arange(0, 24):float():reshape(2, 3, 4)   -- channel k, row y, column x holds 12k + 4y + x

   it('crops x1, y1 to x2, y2 (0-based, ends excluded), as Torch7', function()
      local c = image.crop(t, 1, 0, 3, 2)
      assert.same({2, 2, 2}, c:shape())
      assert.same({1, 2, 5, 6, 13, 14, 17, 18}, flat(c))
   end)

   it('crops by position: centre and corners', function()
      assert.same({5, 6, 17, 18}, flat(image.crop(t, 'c', 2, 1)))
      assert.same({0, 12}, flat(image.crop(t, 'tl', 1, 1)))
      assert.same({3, 15}, flat(image.crop(t, 'tr', 1, 1)))
      assert.same({8, 20}, flat(image.crop(t, 'bl', 1, 1)))
      assert.same({11, 23}, flat(image.crop(t, 'br', 1, 1)))
   end)

   it('refuses a box outside the picture', function()
      local ok, err = pcall(image.crop, t, 2, 0, 5, 1)
      assert.is_false(ok)
      assert.matches('image.crop: the box 3x1 at %(x 2, y 0%) is not inside the 4x3 picture', err)
   end)

   it('mirrors left to right', function()
      assert.same({3, 2, 1, 6, 5, 4}, flat(image.hflip(fnn.tensor({1, 2, 3, 4, 5, 6}, {1, 2, 3}))))
   end)

   it('makes grey with ITU-R 601 weights', function()
      local rgb = fnn.tensor({1, 0, 0, 0.5, 0, 1, 0, 0.5, 0, 0, 1, 0.5}, {3, 1, 4})
      local g = image.to_gray(rgb)
      assert.same({1, 1, 4}, g:shape())
      near({0.299, 0.587, 0.114, 0.5}, flat(g), 1e-6)
      assert.same({1, 2}, flat(image.to_gray(fnn.tensor({1, 2}, {1, 1, 2}))))
   end)
end)
