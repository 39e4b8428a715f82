-- data.TextDataset (core/io/text.c): vocabulary, encode/decode on UTF-8 with multi-byte characters,
-- window counts and contents against a naive Lua reference, files, refusals, and a 100 MB file
-- without a Lua value per character. data.CsvDataset: parsing, target columns, class words.
local fnn = require 'fastnn'
local data = fnn.data

-- naive reference: the characters of a UTF-8 string and their code points
local function chars(s)
   local out = {}
   for ch in s:gmatch('[%z\1-\127\194-\244][\128-\191]*') do out[#out + 1] = ch end
   return out
end
local function code_point(ch)
   local b = {ch:byte(1, -1)}
   if #b == 1 then return b[1] end
   local cp = b[1] % (2 ^ (7 - #b))
   for i = 2, #b do cp = cp * 64 + b[i] % 64 end
   return cp
end
-- vocabulary (sorted distinct code points) and ids, as TextDataset must make them
local function reference(s)
   local cs, set, vocab = chars(s), {}, {}
   for _, ch in ipairs(cs) do
      local cp = code_point(ch)
      if not set[cp] then set[cp] = true; vocab[#vocab + 1] = cp end
   end
   table.sort(vocab)
   local rank = {}
   for k, cp in ipairs(vocab) do rank[cp] = k end
   local ids = {}
   for i, ch in ipairs(cs) do ids[i] = rank[code_point(ch)] end
   return vocab, ids, cs
end

local function tmpfile(bytes)
   local p = os.tmpname()
   local f = assert(io.open(p, 'wb'))
   f:write(bytes)
   f:close()
   return p
end

local TEXT = 'Grüße aus Köln — ☃ snow, 𝄞 music, 日本語 text; ASCII too.\nZweite Zeile: ½ + ¼ = ¾ € 🙂'

describe('data.TextDataset', function()
   it('builds the vocabulary of distinct code points and 1-based ids, as a naive decoder does', function()
      local ds = data.TextDataset(TEXT, 8, {text = true})
      local vocab, ids, cs = reference(TEXT)
      assert.equals('int64', ds.tokens:dtype())
      assert.equals('int64', ds.vocab:dtype())
      assert.same(vocab, ds.vocab:to_table())
      assert.same(ids, ds.tokens:to_table())
      assert.equals(#vocab, ds:vocab_size())
      assert.equals(#cs, ds.n_tokens)
   end)

   it('decodes what it encodes, for 1- to 4-byte characters', function()
      local ds = data.TextDataset(TEXT, 4, {text = true})
      assert.equals(TEXT, ds:decode(ds.tokens))
      for _, piece in ipairs{'ü', '☃', '𝄞', '🙂', 'Köln', '日本語', ''} do
         local ids = ds:encode(piece)
         assert.equals(#chars(piece), ids:numel())
         assert.equals(piece, ds:decode(ids))
      end
      local _, ids = reference(TEXT)
      assert.equals(chars(TEXT)[3], ds:decode(ids[3]))                -- one number
      assert.equals('Grü', ds:decode{ids[1], ids[2], ids[3]})         -- a Lua array
      assert.equals('Grü', ds:decode(ds.tokens:narrow(1, 1, 3):float())) -- whole floats
      assert.equals(TEXT:sub(1, #'Grüße'), ds:decode(ds.tokens:narrow(1, 1, 10):reshape(2, 5):narrow(1, 1, 1)))
   end)

   it('counts and cuts windows of context + 1 tokens, for a table of contexts and strides', function()
      local _, ids = reference(TEXT)
      local n = #ids
      for _, cfg in ipairs{{1, 1}, {8, 1}, {8, 3}, {8, 8}, {n - 1, 1}, {n - 1, 5}, {5, 100}} do
         local context, stride = cfg[1], cfg[2]
         local ds = data.TextDataset(TEXT, context, {text = true, stride = stride})
         local count = math.floor((n - context - 1) / stride) + 1
         assert.equals(count, ds:len())
         for _, i in ipairs{1, math.ceil(count / 2), count} do
            local s = (i - 1) * stride
            local want = {}
            for k = 1, context + 1 do want[k] = ids[s + k] end
            assert.same(want, ds:window(i):to_table())
            local x, y = ds:get(i)
            assert.same({unpack(want, 1, context)}, x:to_table())
            assert.same({unpack(want, 2, context + 1)}, y:to_table())
         end
         -- batches through DataLoader: inputs and targets [B, context], shifted by one
         local seen = 0
         for batch in data.DataLoader(ds, 3):iter() do
            assert.same({batch.size, context}, batch.inputs:shape())
            assert.same({batch.size, context}, batch.targets:shape())
            for r = 1, batch.size do
               local x, y = ds:get(seen + r)
               assert.same(x:to_table(), batch.inputs:select(1, r):to_table())
               assert.same(y:to_table(), batch.targets:select(1, r):to_table())
            end
            seen = seen + batch.size
         end
         assert.equals(count, seen)
      end
      assert.has_error(function() data.TextDataset(TEXT, 3, {text = true}):window(0) end,
                       'TextDataset:window: window 0 outside 1..' .. (n - 3))
   end)

   it('reads a file as it reads the same string; a validation split shares the vocabulary', function()
      local p = tmpfile(TEXT)
      local a, b = data.TextDataset(p, 5), data.TextDataset(TEXT, 5, {text = true})
      assert.equals(p, a.path)
      assert.same(b.tokens:to_table(), a.tokens:to_table())
      assert.same(b.vocab:to_table(), a.vocab:to_table())
      local val = data.TextDataset('Köln ☃ 🙂 aus', 2, {text = true, vocab = a})
      assert.same(a:encode('Köln ☃ 🙂 aus'):to_table(), val.tokens:to_table())
      assert.equals('Köln ☃ 🙂 aus', a:decode(val.tokens))
      local ok, err = pcall(data.TextDataset, 'Köln λ', 2, {text = true, vocab = a})
      assert.is_false(ok)
      assert.matches("text_encode: text: character 'λ' %(U%+03BB%) at byte 7 is not in the vocabulary", err)
      os.remove(p)
   end)

   it('refuses invalid UTF-8 with the byte offset; bytes = true reads any bytes', function()
      local raw = 'abc\255def\192\128'
      local p = tmpfile(raw)
      local ok, err = pcall(function() local _ = data.TextDataset(p, 2) end)
      assert.is_false(ok)
      assert.matches('^spec/text_data_spec%.lua:%d+: TextDataset: text_encode: .*: invalid UTF%-8 at byte 4 %(0xff%)', err)
      for _, bad in ipairs{'\237\160\128', '\192\175', 'x\226\130', '\244\144\128\128'} do   -- surrogate, overlong, cut, > U+10FFFF
         assert.has_error(function() data.TextDataset('ab' .. bad .. 'cd', 1, {text = true}) end)
      end
      local ds = data.TextDataset(p, 2, {bytes = true})
      assert.equals(#raw, ds.n_tokens)
      assert.equals(raw, ds:decode(ds.tokens))
      local bytes = {}
      for i = 1, #raw do bytes[raw:byte(i)] = true end
      local want = {}
      for b = 0, 255 do if bytes[b] then want[#want + 1] = b end end
      assert.same(want, ds.vocab:to_table())
      os.remove(p)
   end)

   it('refuses a text shorter than a window, bad options, a missing file and ids outside the vocabulary', function()
      assert.has_error(function() data.TextDataset('abc', 3, {text = true}) end,
                       'TextDataset: the text has 3 tokens, a window needs context + 1 = 4')
      assert.has_error(function() data.TextDataset('abcdef', 0, {text = true}) end,
                       'TextDataset: context is 0, expected a positive integer')
      assert.has_error(function() data.TextDataset('abcdef', 2, {text = true, stride = 0}) end,
                       'data.TextDataset: stride is 0, expected a positive integer')
      assert.has_error(function() data.TextDataset('/nonexistent/input.txt', 8) end,
                       "TextDataset: cannot open '/nonexistent/input.txt' (pass {text = true} to use the string itself as the text)")
      local ds = data.TextDataset('abcabc', 2, {text = true})
      local ok, err = pcall(function() local _ = ds:decode{1, 4} end)
      assert.is_false(ok)
      assert.matches('^spec/text_data_spec%.lua:%d+: text_decode: id 4 %(element 2 of %[2%]%) outside 1%.%.3', err)
   end)

   it('handles a 100 MB file in C: no Lua value per character', function()
      local line = 'Der Schnee fällt leise, ☃ und 𝄞 klingt. The quick brown fox.\n'
      local chunk = line:rep(16384)
      local reps = math.ceil(100e6 / #chunk)
      local p = os.tmpname()
      local f = assert(io.open(p, 'wb'))
      for _ = 1, reps do f:write(chunk) end
      f:close()
      chunk = nil
      collectgarbage()
      local before = collectgarbage('count')
      local ds = data.TextDataset(p, 128)
      collectgarbage()
      local grew_kb = collectgarbage('count') - before
      os.remove(p)
      local per_line = #chars(line)
      assert.equals(per_line * 16384 * reps, ds.n_tokens)
      assert.equals(ds.n_tokens - 128, ds:len())
      assert.is_true(grew_kb < 256, ('the Lua heap grew by %.0f KB'):format(grew_kb))
      assert.equals(line, ds:decode(ds.tokens:narrow(1, ds.n_tokens - per_line + 1, per_line)))
      local last = ds:decode(ds:window(ds:len()))
      assert.equals(129, #chars(last))
      assert.equals(line, last:sub(-#line))
      ds.tokens:free()
   end)
end)

describe('data.CsvDataset', function()
   local function csv(text) return tmpfile(text) end

   it('reads numbers into inputs and the target column, by name or position', function()
      local p = csv('x1,x2,y\n1,2,0\n3.5,-4,1\n\n5e1,6,2\n')
      local ds = data.CsvDataset(p, {target_columns = {'y'}})
      assert.equals(3, ds:len())
      assert.same({{1, 2}, {3.5, -4}, {50, 6}}, ds.inputs:to_table())
      assert.same({0, 1, 2}, ds.targets:to_table())
      assert.same({'x1', 'x2'}, ds.input_columns)
      assert.same({'y'}, ds.target_columns)
      local by_pos = data.CsvDataset(p, {target_columns = 1})
      assert.same({{2, 0}, {-4, 1}, {6, 2}}, by_pos.inputs:to_table())
      assert.same({1, 3.5, 50}, by_pos.targets:to_table())
      local two = data.CsvDataset(p, {target_columns = {-1, 'x1'}})
      assert.same({3, 2}, two.targets:shape())
      assert.same({{0, 1}, {1, 3.5}, {2, 50}}, two.targets:to_table())
      local default = data.CsvDataset(p)                      -- the last column
      assert.same({0, 1, 2}, default.targets:to_table())
      os.remove(p)
   end)

   it('turns a target column of words into class ids, and batches through DataLoader', function()
      local p = csv('sepal;petal;species\n5.1;1.4;setosa\n7.0;4.7;versicolor\n"6.5";6.0;virginica\n4.9;1.5;setosa\n')
      local ds = data.CsvDataset(p, {target_columns = 'species', delimiter = ';'})
      assert.same({'setosa', 'versicolor', 'virginica'}, ds.classes.species)
      assert.same({1, 2, 3, 1}, ds.targets:to_table())
      assert.same({6.5, 6.0}, ds.inputs:to_table()[3])
      local labels = {}
      for batch in data.DataLoader(ds, 3):prefetch(1):iter() do
         for _, id in ipairs(batch:labels():to_table()) do labels[#labels + 1] = id end
      end
      assert.same({1, 2, 3, 1}, labels)
      os.remove(p)
   end)

   it('reads a file without a header, fills missing fields when asked', function()
      local p = csv('1,2,3\n4,,6\n')
      local ok, err = pcall(data.CsvDataset, p, {header = false})
      assert.is_false(ok)
      assert.matches(":2: column 2 %('2'%) is empty %(set opts.missing to fill it%)", err)
      local ds = data.CsvDataset(p, {header = false, missing = -1})
      assert.same({{1, 2}, {4, -1}}, ds.inputs:to_table())
      assert.same({'1', '2', '3'}, ds.columns)
      os.remove(p)
   end)

   it('names the file, line and column of a bad field, a short row or an unknown column', function()
      local p = csv('a,b\n1,2\n3,oops\n')
      local ok, err = pcall(function() local _ = data.CsvDataset(p, {target_columns = 'a'}) end)
      assert.is_false(ok)
      assert.matches("^spec/text_data_spec%.lua:%d+: CsvDataset: .*:3: column 2 %('b'%) is 'oops', not a number", err)
      os.remove(p)
      p = csv('a,b\n1,2\n3\n')
      ok, err = pcall(data.CsvDataset, p)
      assert.matches('CsvDataset: .*:3: 1 fields, the header has 2', err)
      ok, err = pcall(data.CsvDataset, p, {target_columns = 'c'})
      assert.matches("CsvDataset: no column named 'c' in .* %(columns: a, b%)", err)
      ok, err = pcall(data.CsvDataset, p, {target_columns = 3})
      assert.matches('CsvDataset: target column 3 outside 1%.%.2', err)
      os.remove(p)
      assert.has_error(function() data.CsvDataset('/nonexistent.csv') end)
   end)
end)
