-- nn.Embedding(vocab, width, {padding_idx}): a lookup table of `vocab` rows of `width` features.
-- weight Param [vocab, width] drawn from N(0, 1) (PyTorch's init); the row of padding_idx
-- (1-based, negative from the end) starts at zero and never gets a gradient, so it stays zero.
-- m:lookup(ids), also m(ids): ids 1-based, an int64 tensor, a float tensor of whole numbers or a
-- Lua array (nested for more dims) -> [*ids, width] (one C node: fnn.embedding). An id outside
-- 1..vocab is an error naming it, its position and the vocabulary size.
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local emb = require 'fastnn.ops.embedding'
local C, new, done = fnn_tensor.C, fnn_tensor.new, fnn_tensor.done
local Param = nn.Param

local Embedding = nn.Module:extend('Embedding')
local options = require 'fastnn.options'
local OPTS = options.declare('nn.Embedding', {
   {'padding_idx', 'integer', nil, 'a row (1-based; negative counts from the end) kept at zero and never updated'},
   {'vocab', 'integer', nil, 'rows (in the one-table form; also num_embeddings, input_dim)', min = 1},
   {'num_embeddings', 'integer', nil, "PyTorch's name of vocab", min = 1},
   {'input_dim', 'integer', nil, "Keras's name of vocab", min = 1},
   {'width', 'integer', nil, 'columns (in the one-table form; also embedding_dim, output_dim)', min = 1},
   {'embedding_dim', 'integer', nil, "PyTorch's name of width", min = 1},
   {'output_dim', 'integer', nil, "Keras's name of width", min = 1},
})

local function is_size(v) return type(v) == 'number' and v == math.floor(v) and v >= 1 end

function Embedding:__init(vocab, width, opts)
   if type(vocab) == 'table' then   -- Embedding{vocab = V, width = W, padding_idx = p} (Keras-style names too)
      opts = vocab
      vocab, width = opts.vocab or opts.input_dim or opts.num_embeddings, opts.width or opts.output_dim or
         opts.embedding_dim
   end
   if not is_size(vocab) or not is_size(width) then
      error(('nn.Embedding: sizes are %s and %s, expected positive integers (Embedding(vocab, width, {padding_idx}))'):format(
         options.describe(vocab), options.describe(width)), 3)
   end
   opts = OPTS:check(opts, 3)
   self.vocab, self.width = vocab, width
   local pad = opts.padding_idx
   if pad ~= nil then
      pad = emb._padding_code(('nn.Embedding(%d, %d)'):format(vocab, width), pad, vocab, 3)
      self.padding_idx = pad
   end
   local shape = ffi.new('int64_t[2]', vocab, width)
   local w = new()
   if C.fnn_randn(w, 2, shape) ~= 0 then error(ffi.string(C.fnn_last_error()), 3) end
   w = done(w)
   if pad then   -- zero the padding row: rows above it, a zero row, rows below
      local parts = {}
      if pad > 1 then parts[#parts + 1] = w:narrow(1, 1, pad - 1) end
      parts[#parts + 1] = fnn_tensor.zeros(1, width)
      if pad < vocab then parts[#parts + 1] = w:narrow(1, pad + 1, vocab - pad) end
      w = require('fastnn.ops.shape').cat(parts, 1)
   end
   self.weight = Param(w)
end

-- level counts from the caller of this: 1 here, 2 lookup/forward, 3 the user
local function lookup(self, ids)
   local ids_t = emb._ids_tensor(self:short_str(), ids, 3)
   local out = new()
   if C.fnn_embedding(out, self.weight:tensor(), ids_t, self.padding_idx or 0) ~= 0 then
      error(ffi.string(C.fnn_last_error()), 3)
   end
   return done(out)
end

function Embedding:lookup(ids) local y = lookup(self, ids); return y end
function Embedding:forward(ids) local y = lookup(self, ids); return y end

function Embedding:output_shape(shape)
   local s = {}
   for i, v in ipairs(shape) do s[i] = v end
   s[#s + 1] = self.width
   return s
end

function Embedding:__tostring()
   return ('nn.Embedding(%d, %d%s)'):format(self.vocab, self.width,
      self.padding_idx and (', padding_idx=' .. self.padding_idx) or '')
end

return Embedding
