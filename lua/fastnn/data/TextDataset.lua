-- data.TextDataset(path_or_string, context, opts): character-level language-model data.
--   local ds = data.TextDataset('input.txt', 128)            -- or a Lua string of text
--   ds.tokens      int64 [N]: the whole text as 1-based token ids (one C pass, no Lua value per character)
--   ds.vocab       int64 [V]: the distinct characters (Unicode code points, ascending); id k is ds.vocab[k]
--   ds:vocab_size(), ds:encode(str) -> int64 [n], ds:decode(ids) -> string (ids: tensor, Lua array or number)
--   ds:len()       windows: floor((N - context - 1) / stride) + 1
--   ds:window(i)   int64 [context + 1] starting at token (i - 1) * stride + 1
--   ds:get(i)      input = window[1 .. context], target = window[2 .. context + 1] (both int64 [context])
-- DataLoader batches it in C (take: fnn_take_windows) into inputs and targets [B, context] int64, on
-- the background thread too (prefetch). opts:
--   stride = 1       tokens between window starts (context for non-overlapping windows)
--   bytes = false    true: every byte is a token (vocabulary of byte values; any file, no UTF-8)
--   vocab = v        encode with this vocabulary (a tensor, or another TextDataset: a validation
--                    split then shares the training ids); a character outside it is an error
--   text = true      the first argument is the text itself even if a file has that name
-- A string is read as a path when a file of that name exists; a one-line string that looks like a
-- path (has a '/' or ends in .txt and the like) but names no file is an error, not a tiny text.
-- The text must be UTF-8 (the first bad byte is reported with its offset) unless bytes = true.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local new, done, fail, istype = fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local too_many = fnn_tensor.too_many
local floor = math.floor

local TextDataset = require('fastnn.class')('TextDataset')
local function positive_int(v) return type(v) == 'number' and v >= 1 and v == floor(v) end

local function looks_like_path(s)
   return #s < 4096 and not s:find('\n', 1, true) and (s:find('/', 1, true) or s:match('%.%w+$')) ~= nil
end

-- a file that can be opened for reading
local function readable(path)
   local f = io.open(path, 'rb')
   return f ~= nil and f:close()
end

local OPTS = require('fastnn.options').declare('data.TextDataset', {
   {'stride', 'integer', 1, 'tokens between window starts (context: windows that do not overlap)', min = 1},
   {'bytes', 'boolean', false, 'every byte is a token (any file, no UTF-8)'},
   {'vocab', 'any', nil, 'encode with this vocabulary: a tensor, or another TextDataset'},
   {'text', 'boolean', false, 'the first argument is the text itself even if a file has that name'},
})

function TextDataset.__new(cls, source, context, opts, extra)
   if extra ~= nil then too_many('data.TextDataset', 4, extra, 'source, context, opts') end
   opts = OPTS:check(opts, 2)
   if type(source) ~= 'string' then
      error(('TextDataset: expected a path or a string of text, got a %s'):format(type(source)), 2)
   end
   if not positive_int(context) then
      error(('TextDataset: context is %s, expected a positive integer'):format(show_value(context)), 2)
   end
   local stride = opts.stride or 1
   if not positive_int(stride) then
      error(('TextDataset: stride is %s, expected a positive integer'):format(show_value(stride)), 2)
   end
   local bytes = opts.bytes and 1 or 0
   local given = opts.vocab
   if type(given) == 'table' and given.vocab then given = given.vocab end
   if given ~= nil and not istype(given) then
      error('TextDataset: opts.vocab must be a vocabulary tensor or another TextDataset', 2)
   end
   local is_file = not opts.text and #source < 4096 and not source:find('\n', 1, true) and readable(source)
   if not opts.text and not is_file and looks_like_path(source) then
      error(("TextDataset: cannot open '%s' (pass {text = true} to use the string itself as the text)"):format(source), 2)
   end
   local ids, vocab = new(), given == nil and new() or nil
   local rc
   if is_file then rc = C.fnn_text_encode_file(ids, vocab, source, given, bytes)
   else rc = C.fnn_text_encode(ids, vocab, source, #source, given, bytes) end
   if rc ~= 0 then error('TextDataset: ' .. fnn_tensor.last_error(), 2) end
   ids = done(ids)
   vocab = vocab and done(vocab) or given
   local n_tokens = tonumber(ids.shape_[0])
   if n_tokens < context + 1 then
      error(('TextDataset: %s has %d tokens, a window needs context + 1 = %d'):format(
         is_file and source or 'the text', n_tokens, context + 1), 2)
   end
   return setmetatable({tokens = ids, vocab = vocab, context = context, stride = stride, bytes = bytes == 1,
                        path = is_file and source or nil, n_tokens = n_tokens,
                        n = floor((n_tokens - context - 1) / stride) + 1}, cls)
end

function TextDataset:len(extra)
   if extra ~= nil then too_many('TextDataset:len', 2, extra, 'dataset') end
   return self.n
end
function TextDataset:vocab_size(extra)
   if extra ~= nil then too_many('TextDataset:vocab_size', 2, extra, 'dataset') end
   return tonumber(self.vocab.shape_[0])
end

-- str -> int64 [n] ids under this vocabulary (an unknown character is an error naming it)
function TextDataset:encode(str, extra)
   if extra ~= nil then too_many('TextDataset:encode', 3, extra, 'dataset, str') end
   if type(str) ~= 'string' then error('TextDataset:encode: expected a string', 2) end
   local ids = new()
   if C.fnn_text_encode(ids, nil, str, #str, self.vocab, self.bytes and 1 or 0) ~= 0 then fail() end
   return done(ids)
end

-- ids (tensor of any shape, Lua array, or one number) -> the text
function TextDataset:decode(ids, extra)
   if extra ~= nil then too_many('TextDataset:decode', 3, extra, 'dataset, ids') end
   if type(ids) == 'number' then ids = {ids} end
   if type(ids) == 'table' then ids = fnn_tensor.long(ids) end
   if not istype(ids) then error('TextDataset:decode: expected ids (a tensor, a Lua array or a number)', 2) end
   local n = tonumber(C.fnn_tensor_numel(ids))
   local cap = 4 * math.max(n, 1)
   local buf, len = ffi.new('char[?]', cap), ffi.new('int64_t[1]')
   if C.fnn_text_decode(self.vocab, ids, self.bytes and 1 or 0, buf, cap, len) ~= 0 then fail() end
   return ffi.string(buf, tonumber(len[0]))
end

local function check_index(self, i, op)
   if type(i) ~= 'number' or i ~= floor(i) or i < 1 or i > self.n then
      error(('TextDataset:%s: window %s outside 1..%d'):format(op, tostring(i), self.n), 3)
   end
end

function TextDataset:window(i, extra)
   if extra ~= nil then too_many('TextDataset:window', 3, extra, 'dataset, i') end
   check_index(self, i, 'window')
   return self.tokens:narrow(1, (i - 1) * self.stride + 1, self.context + 1)
end

function TextDataset:get(i, extra)
   if extra ~= nil then too_many('TextDataset:get', 3, extra, 'dataset, i') end
   check_index(self, i, 'get')
   local s = (i - 1) * self.stride + 1
   return self.tokens:narrow(1, s, self.context), self.tokens:narrow(1, s + 1, self.context)
end

-- take(n, ids): windows ids[0..n-1] (an int64_t buffer of 1-based ids) -> inputs, targets [n, context]
function TextDataset:take(n, ids, extra)
   if extra ~= nil then too_many('TextDataset:take', 4, extra, 'dataset, n, ids') end
   local x, y = new(), new()
   if C.fnn_take_windows(x, y, self.tokens, self.context, self.stride, n, ids) ~= 0 then fail() end
   return done(x), done(y)
end

-- what DataLoader's background thread needs to make batches without Lua
function TextDataset:prefetch_source(extra)
   if extra ~= nil then too_many('TextDataset:prefetch_source', 2, extra, 'dataset') end
   return C.FNN_PREFETCH_WINDOWS, self.tokens, nil, self.context, self.stride
end

function TextDataset:__tostring()
   return ('data.TextDataset(%d tokens, vocabulary %d, context %d, stride %d: %d windows)'):format(
      self.n_tokens, self:vocab_size(), self.context, self.stride, self.n)
end

return TextDataset
