-- The loaders of core/io/data.c through the raw FFI: IDX files (plain and
-- gzipped, written here byte by byte), every refusal of a bad file with the
-- file's name, and take_rows. (data/*.lua builds Mnist and DataLoader on these.)
local fnn = require 'fastnn'
local ffi = require 'ffi'
local C = require 'fastnn.C'
local fnn_tensor = require 'fastnn.tensor'

local function be32(n)
   return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end

local write = require('spec.process').write_file

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

   -- past 64 KB a gather is split over the threads (core/ops/index.c): every row lands in its place,
   -- for float32, int64 and bfloat16 rows, odd row lengths and counts, repeats, against a naive copy
   it('gathers big batches split over the threads, every dtype, as a naive loop', function()
      fnn.manual_seed(3)
      for _, case in ipairs{{rows = 700, cols = 301, m = 257}, {rows = 90, cols = 1000, m = 90}} do
         local base = fnn.randn(case.rows, case.cols)
         for _, dt in ipairs{'float', 'long', 'bf16'} do
            local src = base[dt == 'long' and 'float' or dt](base)
            if dt == 'long' then src = fnn.arange(case.rows * case.cols):reshape(case.rows, case.cols):long() end
            local ids = {}
            for i = 1, case.m do ids[i] = (i * 7919) % case.rows + 1 end
            ids[case.m] = ids[1]                                   -- a repeat
            local t = assert(take_rows(src, ids))
            assert.are.same({case.m, case.cols}, t:shape())
            local want, from = {}, src:to_table()
            for i, id in ipairs(ids) do want[i] = from[id] end
            assert.are.same(want, t:to_table(), dt)
         end
      end
   end)

   -- rows of 2, 4 and 8 bytes take their own copy loop (core/ops/index.c's gather_range): labels,
   -- bf16 pairs, int64 ids, a column of a wider tensor (rows apart by its stride), in one thread and
   -- split over the threads (past 64 KB), against a naive copy
   it('gathers rows of 2, 4, 8 and 12 bytes, strided ones too, as a naive loop', function()
      fnn.manual_seed(4)
      local wide = fnn.randn(9000, 3)
      local cases = {
         {fnn.randn(9000), 'float32 [N]'},                                   -- 4 bytes
         {fnn.randn(9000, 2), 'float32 [N,2]'},                              -- 8 bytes
         {fnn.randn(9000):bf16(), 'bfloat16 [N]'},                           -- 2 bytes
         {fnn.randn(9000, 4):bf16(), 'bfloat16 [N,4]'},                      -- 8 bytes
         {fnn.randperm(9000), 'int64 [N]'},                                  -- 8 bytes
         {wide:narrow(2, 2, 1), 'float32 column [N,1], row stride 3'},       -- 4 bytes, strided
         {wide, 'float32 [N,3]'},                                            -- 12 bytes: memcpy
      }
      for _, case in ipairs(cases) do
         local src, what = case[1], case[2]
         local from = src:to_table()
         for _, m in ipairs{1, 5, 128, 9000} do   -- 9000 8-byte rows: 72 KB, split over the threads
            local ids = {}
            for i = 1, m do ids[i] = (i * 7919 + 13) % 9000 + 1 end
            if m > 1 then ids[m] = ids[1] end
            local t = assert(take_rows(src, ids))
            local want = {}
            for i, id in ipairs(ids) do want[i] = from[id] end
            assert.are.same(want, t:to_table(), what .. ', ' .. m .. ' rows')
         end
      end
   end)

   -- a fresh batch's rows of 64 bytes and more (a multiple of 16) are streamed past the cache
   -- (core/ops/index.c's copy_stream: 64 bytes a step, the rest by memcpy): rows that are whole steps,
   -- rows with a 16- or 48-byte rest, a row of 48 bytes and one of 68 (plain copies), on one thread
   -- and split over the threads, against a naive copy and against index_select (plain stores)
   it('streams fresh rows of 64 bytes and up, with and without a rest, as a naive loop', function()
      fnn.manual_seed(5)
      for _, cols in ipairs{12, 16, 17, 20, 28, 784} do
         local src = fnn.randn(3000, cols)
         local from = src:to_table()
         for _, m in ipairs{1, 3, 128, 2999} do
            local ids = {}
            for i = 1, m do ids[i] = (i * 7919 + 5) % 3000 + 1 end
            local t = assert(take_rows(src, ids))
            local want = {}
            for i, id in ipairs(ids) do want[i] = from[id] end
            assert.are.same(want, t:to_table(), cols .. ' floats a row, ' .. m .. ' rows')
            assert.are.same(src:index_select(1, fnn.long(ids)):to_table(), t:to_table())
         end
      end
   end)

   it('refuses an id out of range', function()
      local _, err = take_rows(x, {1, 5})
      assert.matches('take_rows: id 5 outside 1%.%.4 %(rows of %[4,3%]%)', err)
      _, err = take_rows(x, {0})
      assert.matches('take_rows: id 0 outside 1%.%.4', err)
   end)
end)

-- ids as an int64_t buffer
local function id_buf(ids)
   local buf = ffi.new('int64_t[?]', math.max(#ids, 1))
   for i, v in ipairs(ids) do buf[i - 1] = v end
   return buf
end

describe('take_windows', function()
   local tokens = fnn.long{11, 12, 13, 14, 15, 16, 17}

   local function take_windows(t, context, stride, ids)
      local x, y = fnn_tensor.new(), fnn_tensor.new()
      if C.fnn_take_windows(x, y, t, context, stride, #ids, id_buf(ids)) ~= 0 then
         return nil, ffi.string(C.fnn_last_error())
      end
      return fnn_tensor.done(x), fnn_tensor.done(y)
   end

   it('cuts inputs and targets shifted by one, windows starting every stride tokens', function()
      local x, y = take_windows(tokens, 3, 2, {2, 1, 2})
      assert.equals('int64', x:dtype())
      assert.same({{13, 14, 15}, {11, 12, 13}, {13, 14, 15}}, x:to_table())
      assert.same({{14, 15, 16}, {12, 13, 14}, {14, 15, 16}}, y:to_table())
      x, y = take_windows(tokens, 6, 1, {1})
      assert.same({{11, 12, 13, 14, 15, 16}}, x:to_table())
      assert.same({{12, 13, 14, 15, 16, 17}}, y:to_table())
   end)

   it('refuses a window past the end, float tokens and a bad context', function()
      local _, err = take_windows(tokens, 3, 2, {3})
      assert.matches('take_windows: window 3 outside 1%.%.2 %(7 tokens, context 3, stride 2%)', err)
      _, err = take_windows(tokens:float(), 3, 1, {1})
      assert.matches('take_windows: tokens must be a contiguous 1%-D int64 tensor, got float32 %[7%]', err)
      _, err = take_windows(tokens, 0, 1, {1})
      assert.matches('take_windows: context 0 and stride 1 must be >= 1', err)
   end)
end)

describe('text_encode and text_decode', function()
   local function encode(s, given, bytes)
      local ids, vocab = fnn_tensor.new(), fnn_tensor.new()
      if C.fnn_text_encode(ids, given and nil or vocab, s, #s, given, bytes or 0) ~= 0 then
         return nil, ffi.string(C.fnn_last_error())
      end
      return fnn_tensor.done(ids), not given and fnn_tensor.done(vocab) or nil
   end

   it('numbers the distinct code points in ascending order', function()
      local ids, vocab = assert(encode('baé€a'))
      assert.same({97, 98, 233, 8364}, vocab:to_table())
      assert.same({2, 1, 3, 4, 1}, ids:to_table())
      local again = assert(encode('€€b', vocab))
      assert.same({4, 4, 2}, again:to_table())
      local len = ffi.new('int64_t[1]')
      assert.equals(0, C.fnn_text_decode(vocab, ids, 0, nil, 0, len))
      assert.equals(#'baé€a', tonumber(len[0]))
   end)

   it('refuses a vocabulary that repeats or is not int64, and a decode buffer too small', function()
      local _, err = encode('ab', fnn.long{97, 97})
      assert.matches('text_encode: vocabulary entry 2 %(97%) repeats entry 1', err)
      _, err = encode('ab', fnn.tensor{97, 98})
      assert.matches('text_encode: a vocabulary is a 1%-D int64 tensor of code points, got float32 %[2%]', err)
      local ids, vocab = assert(encode('héllo'))
      local buf, len = ffi.new('char[3]'), ffi.new('int64_t[1]')
      assert.equals(-2, C.fnn_text_decode(vocab, ids, 0, buf, 3, len))
      assert.matches('text_decode: 6 bytes do not fit in 3', ffi.string(C.fnn_last_error()))
   end)

   it('reads a file, names it when it is missing', function()
      local ids = fnn_tensor.new()
      assert.equals(-5, C.fnn_text_encode_file(ids, fnn_tensor.new(), '/nonexistent/t.txt', nil, 0))
      assert.matches('text_encode: /nonexistent/t%.txt: cannot open %(No such file or directory%)',
                     ffi.string(C.fnn_last_error()))
   end)
end)

describe('prefetch', function()
   it('hands over every batch in order, then empty headers; checks its arguments', function()
      local x = fnn.arange(10):reshape(5, 2)
      local pp = ffi.new('fnn_prefetch *[1]')
      assert.equals(0, C.fnn_prefetch_new(pp, C.FNN_PREFETCH_ROWS, x, nil, 0, 0, 5, id_buf{5, 4, 3, 2, 1}, 2, 1, 1))
      local p = pp[0]
      local got = {}
      for _ = 1, 4 do
         local a, b = fnn_tensor.new(), fnn_tensor.new()
         assert.equals(0, C.fnn_prefetch_next(p, a, b))
         assert.equals(-1, b.ndim)
         if a.ndim < 0 then got[#got + 1] = 'end' else got[#got + 1] = fnn_tensor.done(a):to_table() end
      end
      C.fnn_prefetch_free(p)
      assert.same({{{8, 9}, {6, 7}}, {{4, 5}, {2, 3}}, {{0, 1}}, 'end'}, got)
      assert.equals(-2, C.fnn_prefetch_new(pp, 7, x, nil, 0, 0, 5, id_buf{1}, 2, 1, 1))
      assert.matches('prefetch: unknown dataset kind 7', ffi.string(C.fnn_last_error()))
      assert.equals(-2, C.fnn_prefetch_new(pp, C.FNN_PREFETCH_ROWS, x, nil, 0, 0, 1, id_buf{1}, 2, 0, 1))
      assert.matches('prefetch: depth 0, expected 1%.%.1024', ffi.string(C.fnn_last_error()))
   end)

   it('reports a failed batch in order, after the good ones, and nothing after it', function()
      local x = fnn.arange(10):reshape(5, 2)
      local pp = ffi.new('fnn_prefetch *[1]')
      assert.equals(0, C.fnn_prefetch_new(pp, C.FNN_PREFETCH_ROWS, x, nil, 0, 0, 4, id_buf{1, 2, 9, 3}, 2, 2, 1))
      local a, b = fnn_tensor.new(), fnn_tensor.new()
      assert.equals(0, C.fnn_prefetch_next(pp[0], a, b))
      assert.same({{0, 1}, {2, 3}}, fnn_tensor.done(a):to_table())
      assert.equals(-2, C.fnn_prefetch_next(pp[0], fnn_tensor.new(), fnn_tensor.new()))
      assert.matches('take_rows: id 9 outside 1%.%.5 %(rows of %[5,2%]%)', ffi.string(C.fnn_last_error()))
      local c = fnn_tensor.new()
      assert.equals(0, C.fnn_prefetch_next(pp[0], c, fnn_tensor.new()))
      assert.equals(-1, c.ndim)
      C.fnn_prefetch_free(pp[0])
   end)
end)
