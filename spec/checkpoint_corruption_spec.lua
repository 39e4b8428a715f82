-- Corrupted files: a small checkpoint cut at every length and with a byte flipped at every
-- position (length, header, data), and hand-made hostile headers. Each is refused with a clear
-- message naming the file and what is wrong, the model is left as it was, and nothing claimed by
-- a header is allocated before it is checked against the file.
local fnn = require 'fastnn'
local nn = fnn.nn
local bit = require 'bit'

local dir = io.popen('mktemp -d /tmp/fastnn-corrupt-XXXXXX'):read('*l')
local function file(name) return dir .. '/' .. name end
teardown(function() os.execute('rm -rf ' .. dir) end)

local process = require 'spec.process'
local read_all, write_file = process.read_all, process.write_file

local function snapshot(m)
   local s = {}
   for _, pair in ipairs(m:named_parameters()) do s[#s + 1] = pair[2]:tensor():to_flat() end
   for _, pair in ipairs(m:named_buffers()) do s[#s + 1] = pair[2]:to_flat() end
   return s
end

local function make() return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)) end

-- the 8-byte header length of a safetensors file
local function header_length(bytes)
   local n = 0
   for i = 8, 1, -1 do n = n * 256 + bytes:byte(i) end
   return n
end

describe('a corrupted checkpoint', function()
   fnn.manual_seed(1)
   local good = file('good.fdl')
   local model = make()
   model(fnn.randn(5, 3))
   fnn.save(model, good)
   local bytes = read_all(good)
   local size, n = #bytes, header_length(bytes)
   local data_start = 8 + n

   it('is a small file with every region present', function()
      assert.is_true(n > 100 and size > data_start + 50, ('size %d, header %d'):format(size, n))
      assert.equals(0, n % 8)   -- data 8-aligned
   end)

   it('is refused at every truncation length, with a message saying what is missing', function()
      local target = make()
      local before = snapshot(target)
      local cut = file('cut.fdl')
      for len = 0, size - 1 do
         write_file(cut, bytes:sub(1, len))
         local r, err = fnn.try_load(target, cut)
         assert.is_nil(r, 'length ' .. len .. ' was accepted')
         local prefix = 'load: ' .. cut .. ': '
         assert.equals(prefix, err:sub(1, #prefix), err)
         if len < 8 then
            assert.equals(prefix .. ('truncated: %d bytes, less than the 8-byte header length a safetensors file '
                          .. 'starts with'):format(len), err)
         elseif len < data_start then
            assert.equals(prefix .. ('header length %d runs past the end of the file (%d bytes): truncated or '
                          .. 'corrupted'):format(n, len), err)
         else
            assert.matches(("tensor '[%%w%%._]+' has data_offsets %%[%%d+, %%d+%%] outside the file's %d data bytes "
                            .. '%%(truncated%%?%%)$'):format(len - data_start), err)
         end
      end
      assert.same(before, snapshot(target))
   end)

   it('is refused for a byte flipped anywhere: length, header or data', function()
      local target = make()
      local before = snapshot(target)
      local bad = file('flipped.fdl')
      local seen = {length = 0, header = 0, data = 0}
      for pos = 1, size do
         for _, mask in ipairs{0x01, 0xFF} do
            local b = bit.bxor(bytes:byte(pos), mask)
            write_file(bad, bytes:sub(1, pos - 1) .. string.char(b) .. bytes:sub(pos + 1))
            local r, err = fnn.try_load(target, bad)
            assert.is_nil(r, ('byte %d ^ 0x%02x was accepted'):format(pos, mask))
            local region = pos <= 8 and 'length' or pos <= data_start and 'header' or 'data'
            seen[region] = seen[region] + 1
            assert.matches('^load: ' .. bad:gsub('%p', '%%%0') .. ': ', err)
            if region == 'data' then
               -- the data region is covered by the tensors' CRCs
               assert.matches("tensor '[%w%._]+' fails its CRC%-32 check %(stored %x+, computed %x+%): the data is corrupted$",
                              err)
            elseif region == 'header' then
               assert.is_truthy(err:find('the header fails its CRC-32 check', 1, true) or err:find('corrupted', 1, true)
                                or err:find('not valid JSON', 1, true) or err:find('has no', 1, true)
                                or err:find('is not', 1, true) or err:find('dtype', 1, true)
                                or err:find('does not match the model', 1, true), err)
            end
         end
      end
      assert.same(before, snapshot(target))
      assert.equals(16, seen.length)
      assert.equals(2 * n, seen.header)
      assert.equals(2 * (size - data_start), seen.data)
   end)

   it('still loads when intact (the loops above used copies)', function()
      local target = make()
      fnn.load(target, good)
      assert.same(snapshot(model), snapshot(target))
   end)

   it('is refused by load_training and load_safetensors the same way', function()
      local bad = file('bad-data.fdl')
      write_file(bad, bytes:sub(1, size - 1) .. string.char(bit.bxor(bytes:byte(size), 0x10)))
      local r, err = fnn.try_load_safetensors(bad)
      assert.is_nil(r)
      assert.matches("^load_safetensors: .*: tensor '2%.num_batches_tracked' fails its CRC%-32 check", err)
      local m = make()
      fnn.save_training(m, fnn.optim.Adam(m:parameters(), 0.01), 1, file('t.fdl'))
      local t = read_all(file('t.fdl'))
      write_file(bad, t:sub(1, #t - 1) .. string.char(bit.bxor(t:byte(#t), 0x10)))
      r, err = fnn.try_load_training(m, fnn.optim.Adam(m:parameters(), 0.01), bad)
      assert.is_nil(r)
      assert.matches("^load_training: .*: tensor '[%w%._]+' fails its CRC%-32 check", err)
   end)
end)

-- a file from a header text and data bytes
local function safetensors(header, data)
   local n = #header
   local len = {}
   for i = 1, 8 do
      len[i] = string.char(n % 256)
      n = math.floor(n / 256)
   end
   return table.concat(len) .. header .. (data or '')
end

describe('a hostile or malformed header', function()
   local cases = {
      {'{"x":{"dtype":"F32","shape":[1000000000000,1000000],"data_offsets":[0,8]}}', 8,
       "tensor 'x' claims F32 %[1000000000000,1000000%], more than the 8 bytes its data_offsets %[0, 8%] hold"},
      {'{"x":{"dtype":"F32","shape":[250000000000000],"data_offsets":[0,1000000000000000]}}', 8,
       "tensor 'x' has data_offsets %[0, 1000000000000000%] outside the file's 8 data bytes"},
      {'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', 8,
       "tensor '[xy]' starts at data byte 4, where 8 was expected"},
      {'{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', 8, "tensor 'x' starts at data byte 4, where 0 was expected"},
      {'{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}', 8,
       "tensor 'x' is F32 %[1%] %(4 bytes%) but its data_offsets %[0, 8%] hold 8"},
      {'{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', 8,
       "tensor 'x' claims F32 %[3%], more than the 8 bytes its data_offsets %[0, 8%] hold"},
      {'{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', 8,
       'the tensors cover 4 data bytes but the file holds 8 after the header'},
      {'{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', 8,
       "tensor 'x' appears twice in the header"},
      {'{"x":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}', 8, "tensor 'x' has dtype U8, which fastnn does not read"},
      {'{"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', 8, "tensor 'x': size 1 of its shape is not a whole number"},
      {'{"x":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}}', 8, "tensor 'x': size 1 of its shape is not a whole number"},
      {'{"x":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}}', 8, "tensor 'x' has 9 dims, at most 8"},
      {'{"x":{"shape":[2],"data_offsets":[0,8]}}', 8, "tensor 'x' has no dtype"},
      {'{"x":{"dtype":"F32","shape":[2]}}', 8, "tensor 'x' has no data_offsets"},
      {'{"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}', 8, "tensor 'x' has data_offsets %[8, 0%] outside"},
      {'{"__metadata__":{"a":1},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8,
       "__metadata__ value of 'a' is not a string"},
      {'{"__metadata__":{"fdl.kind":"weights"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8,
       'it has fdl%. metadata but no fdl%.header_crc32'},
      {'{"__metadata__":{"fdl.header_crc32":"zz"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8,
       "fdl%.header_crc32 is 'zz', expected 8 hex digits"},
      {'["x"]', 8, 'the header does not start with'},
      {'{"x":', 8, 'the header is not valid JSON'},
      {'{"x":1} junk', 8, "bytes after the header's JSON"},
      {'{"x":1}', 8, "tensor 'x' is not an object"},
   }
   for i, case in ipairs(cases) do
      it(('is refused before allocating (case %d: %s)'):format(i, case[3]:gsub('%%', '')), function()
         local path = file('hostile' .. i .. '.safetensors')
         write_file(path, safetensors(case[1], ('\0'):rep(case[2])))
         local peak = fnn.peak_bytes()
         local r, err = fnn.try_load_safetensors(path)
         assert.is_nil(r)
         assert.matches('^load_safetensors: ' .. path:gsub('%p', '%%%0') .. ': ', err)
         assert.matches(case[3], err)
         assert.is_true(fnn.peak_bytes() - peak < 1024 * 1024)
      end)
   end

   it('is refused when the header length is implausible or runs past the end', function()
      local path = file('long.safetensors')
      write_file(path, string.char(0, 0, 0, 0, 0, 1, 0, 0) .. '{}')
      local _, err = fnn.try_load_safetensors(path)
      assert.matches('header length 1099511627776 is not plausible', err)
      write_file(path, string.char(200, 0, 0, 0, 0, 0, 0, 0) .. '{}')
      _, err = fnn.try_load_safetensors(path)
      assert.matches('header length 200 runs past the end of the file %(10 bytes%)', err)
      write_file(path, string.char(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF) .. '{}')
      _, err = fnn.try_load_safetensors(path)
      assert.matches('header length 18446744073709551615 is not plausible', err)
   end)

   it('is fine when well formed, padded and empty', function()
      local path = file('ok.safetensors')
      write_file(path, safetensors('{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"I64",'
                                   .. '"shape":[0,3],"data_offsets":[8,8]}}   ', string.char(0, 0, 128, 63, 0, 0, 0, 64)))
      local t = fnn.load_safetensors(path)
      assert.same({1, 2}, t.x:to_flat())
      assert.same({0, 3}, t.e:shape())
      write_file(path, safetensors('{}'))
      assert.is_nil(next((fnn.load_safetensors(path))))
      local _, err = fnn.try_load_safetensors(dir)
      assert.matches('not a regular file', err)
   end)

   it('of a file from another tool is refused at every truncation length too', function()
      local path = file('plain.safetensors')
      fnn.save_safetensors({a = fnn.ones(3, 2), b = fnn.zeros(4)}, path, {checksums = false})
      local bytes = read_all(path)
      local cut = file('plain-cut.safetensors')
      assert.is_false(require('fastnn.serialize').info(path).checksummed)
      for len = 0, #bytes - 1 do
         write_file(cut, bytes:sub(1, len))
         local r, err = fnn.try_load_safetensors(cut)
         assert.is_nil(r, 'length ' .. len)
         assert.matches('truncated', err)
      end
   end)
end)
