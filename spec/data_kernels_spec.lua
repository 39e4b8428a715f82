-- The loaders of core/data.c through the raw FFI: IDX files (plain and
-- gzipped, written here byte by byte), every refusal of a bad file with the
-- file's name, and take_rows. (data/*.lua builds Mnist and DataLoader on these.)
local fnn = require 'fastnn'
local ffi = require 'ffi'
local C = require 'fastnn.C'
local fnn_tensor = require 'fastnn.tensor'

local function be32(n)
   return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end

local function write(path, bytes)
   local f = assert(io.open(path, 'wb'))
   f:write(bytes)
   f:close()
end

local function idx(dims, values, type_byte)
   local parts = {string.char(0, 0, type_byte or 8, #dims)}
   for _, d in ipairs(dims) do parts[#parts + 1] = be32(d) end
   for _, v in ipairs(values) do parts[#parts + 1] = string.char(v) end
   return table.concat(parts)
end

-- read_idx as Lua sees it: a tensor, or nil and the message
local function read_idx(path, scale)
   local out = fnn_tensor.new()
   if C.fnn_read_idx(out, path, scale or 1) ~= 0 then return nil, ffi.string(C.fnn_last_error()) end
   return fnn_tensor.done(out)
end

local function take_rows(x, ids)
   local out = fnn_tensor.new()
   local buf = ffi.new('int64_t[?]', math.max(#ids, 1))
   for i, v in ipairs(ids) do buf[i - 1] = v end
   if C.fnn_take_rows(out, x, #ids, buf) ~= 0 then return nil, ffi.string(C.fnn_last_error()) end
   return fnn_tensor.done(out)
end

describe('read_idx', function()
   local dir = os.tmpname()
   os.remove(dir)
   os.execute('mkdir -p ' .. dir)
   local values = {}
   for i = 1, 2 * 3 * 4 do values[i] = (i * 37) % 256 end
   local plain = dir .. '/images-idx3-ubyte'
   write(plain, idx({2, 3, 4}, values))

   teardown(function() os.execute('rm -rf ' .. dir) end)

   it('reads a plain file: dims from the header, bytes times the scale', function()
      local t = assert(read_idx(plain, 1 / 255))
      assert.are.same({2, 3, 4}, t:shape())
      local got = t:to_flat()
      for i = 1, #values do assert.is_true(math.abs(got[i] - values[i] / 255) < 1e-7) end
   end)

   it('reads the same file gzipped, and 1-D label files', function()
      assert.equals(0, os.execute(('gzip -c %s > %s.gz'):format(plain, plain)) and 0 or 1)
      local t = assert(read_idx(plain .. '.gz', 1))
      assert.are.same({2, 3, 4}, t:shape())
      assert.are.same(values, t:to_flat())
      local labels = dir .. '/labels-idx1-ubyte'
      write(labels, idx({5}, {3, 0, 9, 1, 255}))
      assert.are.same({3, 0, 9, 1, 255}, assert(read_idx(labels)):to_flat())
   end)

   it('names the file when it is missing', function()
      local t, err = read_idx(dir .. '/nope.gz')
      assert.is_nil(t)
      assert.matches('read_idx: .*/nope%.gz: cannot open %(No such file or directory%)', err)
   end)

   it('refuses a bad magic, a type other than unsigned bytes and bad dim counts', function()
      local p = dir .. '/bad'
      write(p, 'GIF89a....')
      local _, err = read_idx(p)
      assert.matches('read_idx: .*/bad: bad magic 0x47494638 %(not an IDX file%)', err)
      write(p, idx({2}, {}, 0x0d) .. string.rep('\0', 8))
      _, err = read_idx(p)
      assert.matches('read_idx: .*/bad: data type 0x0d not supported %(only unsigned bytes, 0x08%)', err)
      write(p, string.char(0, 0, 8, 0))
      _, err = read_idx(p)
      assert.matches('read_idx: .*/bad: 0 dims in the header %(1%.%.8 supported%)', err)
   end)

   it('refuses truncated headers and data, plain or gzipped, naming the byte counts', function()
      local p = dir .. '/short'
      write(p, string.char(0, 0, 8, 3) .. be32(60000))
      local _, err = read_idx(p)
      assert.matches('read_idx: .*/short: truncated header %(4 of 12 bytes of sizes%)', err)
      write(p, string.char(0, 0))
      _, err = read_idx(p)
      assert.matches('truncated header %(2 of 4 bytes%)', err)
      write(p, idx({60000, 28, 28}, {1, 2, 3}))
      _, err = read_idx(p)
      assert.matches('read_idx: .*/short: truncated, expected 47040000 bytes of data, got 3', err)
      -- a gzip stream cut in the middle
      local big = {}
      for i = 1, 5000 do big[i] = (i * 7919) % 256 end
      write(p, idx({5000}, big))
      os.execute(('gzip -c %s | head -c 200 > %s.gz'):format(p, p))
      _, err = read_idx(p .. '.gz')
      assert.matches('read_idx: .*/short%.gz: truncated, expected 5000 bytes of data, got %d+', err)
   end)

   it('refuses absurd sizes in a header without allocating them', function()
      local p = dir .. '/huge'
      write(p, string.char(0, 0, 8, 4) .. be32(4294967295) .. be32(4294967295) .. be32(2) .. be32(2))
      local _, err = read_idx(p)
      assert.matches('read_idx: .*/huge: sizes .* are implausibly large', err)
   end)

   it('survives random corruption of a gzipped file', function()
      local p = dir .. '/images-idx3-ubyte.gz'
      local f = assert(io.open(p, 'rb'))
      local bytes = f:read('*a')
      f:close()
      for seed = 1, 30 do
         local b = {bytes:byte(1, -1)}
         local pos = 1 + (seed * 7) % #b
         b[pos] = (b[pos] + 1 + seed) % 256
         write(p .. '.bad', string.char(unpack(b)))
         local t, err = read_idx(p .. '.bad')
         assert.is_true(t ~= nil or err:match('^read_idx: ') ~= nil)
      end
   end)
end)

describe('take_rows', function()
   local x = fnn.tensor{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}

   it('gathers rows by 1-based ids, repeats allowed', function()
      local t = assert(take_rows(x, {4, 1, 1}))
      assert.are.same({3, 3}, t:shape())
      assert.are.same({10, 11, 12, 1, 2, 3, 1, 2, 3}, t:to_flat())
   end)

   it('keeps trailing dims and reads non-contiguous rows', function()
      local images = fnn.arange(24):reshape(4, 2, 3)
      local t = assert(take_rows(images, {2, 4}))
      assert.are.same({2, 2, 3}, t:shape())
      assert.are.same({6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23}, t:to_flat())
      local xt = x:t()                            -- [3,4], rows strided
      assert.are.same({3, 6, 9, 12, 1, 4, 7, 10}, assert(take_rows(xt, {3, 1})):to_flat())
   end)

   it('takes no rows', function()
      assert.are.same({0, 3}, assert(take_rows(x, {})):shape())
   end)

   it('refuses an id out of range', function()
      local _, err = take_rows(x, {1, 5})
      assert.matches('take_rows: id 5 outside 1%.%.4 %(rows of %[4,3%]%)', err)
      _, err = take_rows(x, {0})
      assert.matches('take_rows: id 0 outside 1%.%.4', err)
   end)
end)
