-- data.DataLoader(dataset, batch_size): batches of a dataset.
--   local loader = data.DataLoader(ds, 128):shuffle(true):drop_last(false):seed(7):prefetch(2)
--   for batch, i in loader:iter() do model(batch.inputs) ... batch.targets ... batch:labels() end
--   loader:len()  --> number of batches per pass
-- Each iter() is one pass over the data. With shuffle, each iter() draws a new
-- permutation: from the loader's own stream when seed(n) was given (so a new
-- loader with the same seed repeats the sequence of epochs), otherwise from
-- fastnn's random source (reproducible under fnn.manual_seed).
-- A batch is {inputs = tensor [B, ...], targets = tensor [B, ...], size = B}
-- and batch:labels() gives the targets as an int64 tensor of 1-based class ids.
-- The order of a pass is an int64_t buffer of 1-based ids (exact at any length), drawn in C
-- (fnn_loader_order: a Fisher-Yates over the loader's splitmix64 stream, the same draws as the Lua
-- loop it replaced, so a seed gives the same batches as before).
--
-- Reused buffers: DataLoader(ds, B, {reuse = true}) (or :reuse()) writes each batch into buffers
-- the loader owns for the pass and overwrites with a later batch, as Torch7's modules reuse their output tensors: a
-- batch (its inputs and targets) is valid until the loop asks for the next one; to keep one
-- longer, copy it (batch.inputs * 1). The batch table and its two tensors are the same objects
-- for every batch of a pass too (refilled in place, the last batch's inputs then shorter), so a
-- batch costs Lua no allocation: keep neither the table nor batch.inputs across batches, only
-- copies. A fresh batch is memory the CPU has not touched for a while
-- (batches are freed only when Lua's GC runs); the same buffer stays in cache, so a shuffled
-- Fashion-MNIST epoch of batches is ~1.8x faster. On the main thread one buffer per tensor serves
-- the pass; with prefetch(k) a pool of k + 1 + workers (the batch held, the k made ahead, a batch
-- a worker was still making when the loop made it itself). The last batch of a pass is a view of
-- its buffer's first rows. It applies to the datasets the core gathers without Lua
-- (prefetch_source(): TensorDataset, so Mnist, FashionMnist and CsvDataset, and TextDataset) on
-- the cpu; others are refused by name.
--
-- Background prefetch: loader:prefetch(k) makes a C thread assemble the next k batches of a
-- pass while the caller works on the current one; loader:prefetch(k, {workers = n}) makes n
-- threads share that work (PyTorch's num_workers; decoding pictures is where it pays). It applies to the datasets the core can read
-- without Lua, those with prefetch_source(): TensorDataset (so Mnist and FashionMnist) and
-- TextDataset; and ImageFolder (prefetch_images(): decoding and transforms in C). A Lua dataset (get or write in Lua) cannot run off the main thread (C never calls
-- into Lua), so it falls back to making its batches on the main thread, as without prefetch;
-- loader:is_prefetching() says which applies. The batches are the same either way: the same
-- order and the same C functions, for any number of workers. The threads run at idle priority, so
-- they never slow the training step's own threads; a batch not made when the loop asks for it, the
-- loop makes itself (and when the loop only waits for data, every thread gathers). A pass left early (a
-- break) stops its thread when the iterator is collected; a finished pass stops it at once.
-- Datasets, fastest first:
--   take(n, ids)  (TensorDataset, TextDataset): one C call per tensor gathers the rows;
--       a dataset with wants_seed = true (ImageFolder) gets take(n, ids, seed), a seed from the
--       loader's stream per batch when seed(n) was given (nil otherwise) for its random transforms
--   write(i, input_slot, target_slot) with fields input_shape and target_shape
--       (per-item shapes, target_shape {} for a scalar, nil for none): slots are
--       float* into the batch buffer, item-sized, row-major, written at [0 .. numel-1]
--   get(i) -> input, target (tensors, numbers or nested tables), stacked per batch
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local bit = require 'bit'
local fnn_tensor = require 'fastnn.tensor'
local C, new, done, fail, istype = fnn_tensor.C, fnn_tensor.new, fnn_tensor.done, fnn_tensor.fail, fnn_tensor.is_tensor
local floor = math.floor
local parse_device = require('fastnn.device')._parse
local too_many = require('fastnn.tensor').too_many   -- an argument past the last: refused, never dropped

local DataLoader = require('fastnn.class')('DataLoader')

-- the options table is the chained setters' shorthand: DataLoader(ds, 32, {shuffle = true, seed = 7})
local OPTS = require('fastnn.options').declare('data.DataLoader', {
   {'shuffle', 'boolean', false, 'a new permutation each pass (as :shuffle())'},
   {'drop_last', 'boolean', false, 'leave out a last batch smaller than the batch size (as :drop_last())'},
   {'seed', 'number', nil, "the loader's own shuffle stream (as :seed(n)); none: fastnn's random source"},
   {'prefetch', 'integer|boolean', 0, 'batches a C thread keeps ready, 0..1024 (as :prefetch(k); true: 2)',
    min = 0, max = 1024},
   {'workers', 'integer', 1, 'threads that make the prefetched batches, 1..64 (as :prefetch(k, {workers = n}))',
    min = 1, max = 64},
   {'device', 'any', nil, "move each batch there: a Device, 'cpu', 'cuda' or 'cuda:<n>' (as :to_device(d))"},
   {'reuse', 'boolean', false, 'write each batch into buffers the loader overwrites with a later batch (as '
    .. ':reuse()): a batch, its inputs and targets, is valid only until the loop asks for the next one (keep one '
    .. 'with a copy: batch.inputs * 1); for datasets with prefetch_source() (TensorDataset, Mnist, TextDataset) on the '
    .. "cpu, refused for others and with a device other than 'cpu'"},
})

local reuse_refusal   -- below: why {reuse = true} cannot apply

function DataLoader.__new(cls, ds, batch_size, opts, extra)
   if extra ~= nil then too_many('data.DataLoader', 4, extra, 'dataset, batch_size, opts') end
   if type(ds) ~= 'table' or type(ds.len) ~= 'function' then
      error('DataLoader: expected a dataset (a table with len() and get(i), write(...) or take(...))', 2)
   end
   if not (ds.take or ds.write or ds.get) then
      error('DataLoader: the dataset has none of take(n, ids), write(i, in, tgt) and get(i)', 2)
   end
   batch_size = batch_size or 1
   if type(batch_size) ~= 'number' or batch_size < 1 or batch_size ~= floor(batch_size) then
      error(('DataLoader: batch size is %s, expected a positive integer'):format(show_value(batch_size)), 2)
   end
   local o = OPTS:check(opts, 2)
   local self = setmetatable({dataset = ds, batch_size = batch_size, _shuffle = o.shuffle, _drop_last = o.drop_last,
                              _rng = nil, _device = o.device, _prefetch = 0, _workers = 1}, cls)
   if o.seed ~= nil then self:seed(o.seed) end
   if o.reuse then
      self._reuse = true
      local refused = reuse_refusal(self)
      if refused then error(refused, 2) end
   end
   if o.prefetch ~= 0 then self:prefetch(o.prefetch, {workers = o.workers}) end
   return self
end

function DataLoader:shuffle(on, extra)
   if extra ~= nil then too_many('DataLoader:shuffle', 3, extra, 'loader, on') end
   self._shuffle = on == nil or on and true or false
   return self
end

function DataLoader:drop_last(on, extra)
   if extra ~= nil then too_many('DataLoader:drop_last', 3, extra, 'loader, on') end
   self._drop_last = on == nil or on and true or false
   return self
end

-- splitmix64: a small, good generator over uint64 cdata (wraps mod 2^64)
local function seed_state(n)
   local s = ffi.new('uint64_t[1]')
   s[0] = ffi.cast('uint64_t', n) * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL
   return s
end
local function next_u64(s)
   local z = s[0] + 0x9E3779B97F4A7C15ULL
   s[0] = z
   z = bit.bxor(z, bit.rshift(z, 30)) * 0xBF58476D1CE4E5B9ULL
   z = bit.bxor(z, bit.rshift(z, 27)) * 0x94D049BB133111EBULL
   return bit.bxor(z, bit.rshift(z, 31))
end

function DataLoader:seed(n, extra)
   if extra ~= nil then too_many('DataLoader:seed', 3, extra, 'loader, n') end
   if type(n) ~= 'number' then error('DataLoader:seed: expected a number', 2) end
   self._rng = seed_state(n)
   return self
end

-- batches are moved to device d (what Tensor:to accepts). To a GPU, each batch is staged into a
-- pinned host buffer (a cached one) and copied on the device's copy stream: iter() returns the batch
-- once the copy is queued, so the loop makes batch k+1 (and the GPU copies it) while the GPU still
-- computes on batch k; the compute stream waits for the copy on the GPU, never the host.
function DataLoader:to_device(d, extra)
   if extra ~= nil then too_many('DataLoader:to_device', 3, extra, 'loader, device') end
   local was = self._device
   self._device = d
   local refused = self._reuse and reuse_refusal(self)
   if refused then self._device = was; error(refused, 2) end
   return self
end

-- the dataset's kind in a message: its class name, else what it offers
local function kind_of(ds)
   if type(ds._name) == 'string' then return ds._name end
   return ds.take and 'a Lua dataset with take()' or ds.write and 'a Lua dataset with write()'
      or 'a Lua dataset with get()'
end

-- why reuse cannot apply (nil: it can): it needs a dataset the core gathers (prefetch_source) and
-- batches that stay on the cpu
reuse_refusal = function(self)
   local ds = self.dataset
   if type(ds.prefetch_source) ~= 'function' then
      return ('DataLoader: reuse is not supported for %s (only datasets with prefetch_source(): TensorDataset, '
              .. 'Mnist, FashionMnist, CsvDataset, TextDataset)'):format(kind_of(ds))
   end
   if self._device ~= nil then
      local dev = parse_device('to_device', self._device, 3)
      if dev.type ~= 'cpu' then
         return ('DataLoader: reuse is for batches on the cpu, not moved to %s (a batch copied to a device is a '
                 .. 'fresh tensor anyway: leave reuse off)'):format(tostring(dev))
      end
   end
   return nil
end

-- reuse(on): write each batch into buffers the loader overwrites (see the top of this file)
function DataLoader:reuse(on, extra)
   if extra ~= nil then too_many('DataLoader:reuse', 3, extra, 'loader, on') end
   on = on == nil or on and true or false
   if on then
      local was = self._reuse
      self._reuse = true
      local refused = reuse_refusal(self)
      if refused then self._reuse = was; error(refused, 2) end
   else
      self._reuse = false
   end
   return self
end

-- prefetch(k[, {workers = n}]): C threads (one unless told) keep the next k batches ready (0 or
-- false: off)
local PREFETCH_OPTS = require('fastnn.options').declare('data.DataLoader:prefetch', {
   {'workers', 'integer', 1, 'threads that make the batches, 1..64 (each batch is the same for any number)',
    min = 1, max = 64},
})
function DataLoader:prefetch(k, opts, extra)
   if extra ~= nil then too_many('DataLoader:prefetch', 4, extra, 'loader, k, opts') end
   local o = PREFETCH_OPTS:check(opts, 2)
   if k == nil or k == true then k = 2 end
   if k == false then k = 0 end
   if type(k) ~= 'number' or k < 0 or k > 1024 or k ~= floor(k) then
      error(('DataLoader:prefetch: depth is %s, expected an integer 0..1024'):format(show_value(k)), 2)
   end
   self._prefetch = k
   self._workers = o.workers
   return self
end

-- true when iter() makes the batches on the background thread (prefetch on, a dataset the core reads)
function DataLoader:is_prefetching(extra)
   if extra ~= nil then too_many('DataLoader:is_prefetching', 2, extra, 'loader') end
   local ds = self.dataset
   return self._prefetch > 0 and (type(ds.prefetch_source) == 'function' or type(ds.prefetch_images) == 'function')
end

-- shard(rank, world): this rank's part of every pass, for data parallel (PyTorch's
-- DistributedSampler). Every rank draws the same permutation (the loader's own stream; seed 0
-- unless seed(n) is given) and takes its items rank+1, rank+1+world, ... (rank is 0-based, as
-- fastnn.distributed.rank()), so the ranks' slices are disjoint and together cover the pass.
-- Every rank gets the same count, so all run the same number of steps: ceil(n/world) items,
-- the last ranks wrapping around to the first items of the permutation when world does not
-- divide n; with drop_last, floor(n/world) items (the tail of the permutation is dropped),
-- then whole batches only. The batch at step k of the world is the batch at step k of one
-- process at batch world*B over the same permutation.
function DataLoader:shard(rank, world, extra)
   if extra ~= nil then too_many('DataLoader:shard', 4, extra, 'loader, rank, world') end
   if type(world) ~= 'number' or world < 1 or world ~= floor(world) then
      error(('DataLoader:shard: world size is %s, expected a positive integer'):format(show_value(world)), 2)
   end
   if type(rank) ~= 'number' or rank < 0 or rank >= world or rank ~= floor(rank) then
      error(('DataLoader:shard: rank is %s, expected 0..%d (0-based, as distributed.rank())'):format(
         show_value(rank), world - 1), 2)
   end
   self._shard = {rank = rank, world = world}
   if self._rng == nil then self._rng = seed_state(0) end   -- the same permutation on every rank
   return self
end

-- the number of items of one pass on this rank
local function shard_count(self, n)
   local w = self._shard.world
   if self._drop_last then return floor(n / w) end
   return floor((n + w - 1) / w)
end

-- this rank's ids of the pass order ids (n ids): positions rank, rank + world, ... (wrapping)
local function shard_ids(self, ids, n)
   local r, w = self._shard.rank, self._shard.world
   local m = shard_count(self, n)
   local out = ffi.new('int64_t[?]', math.max(m, 1))
   for j = 0, m - 1 do out[j] = ids[(r + j * w) % n] end
   return out, m
end

function DataLoader:len(extra)
   if extra ~= nil then too_many('DataLoader:len', 2, extra, 'loader') end
   local n, b = self.dataset:len(), self.batch_size
   if self._shard then n = shard_count(self, n) end
   if self._drop_last then return floor(n / b) end
   return floor((n + b - 1) / b)
end

-- batch:labels(): the targets as a flat int64 tensor of 1-based class ids (r[i], #r, to_table());
-- float targets must hold whole numbers (a refusal names the first that does not)
local Batch = require('fastnn.class')('Batch')
local flat_shape = ffi.new('int64_t[1]', -1)
function Batch:labels(extra)
   if extra ~= nil then too_many('labels', 2, extra, 'batch') end
   local t = self.targets
   if t == nil then error('labels: this batch has no targets', 2) end
   local flat = new()
   if C.fnn_reshape(flat, t, 1, flat_shape) ~= 0 then fail() end
   local out = new()
   if C.fnn_to_dtype(out, done(flat), 1) ~= 0 then fail() end
   return done(out)
end

-- ---------------------------------------------------------------------------
-- the order of one pass: an int64_t buffer of 1-based ids, shuffled in place

-- filled and shuffled in C (fnn_loader_order): the Fisher-Yates over next_u64's stream that this
-- file ran in Lua until then, draw for draw, so a seed still gives the same passes
-- The buffer is handed back when its pass is over (spare_order), for the next pass of any loader
-- (a training loop's next epoch, a loader made anew each epoch, a validation loader in between):
-- a fresh one is a new mapping each pass (~0.15 ms of page faults for Fashion-MNIST's 480 KB). One
-- spare, the largest, held weakly (the GC may take it). A pass that is still going (two iterators
-- at once, a pass left by a break) keeps its own; the next pass then makes a new one.
local spare = setmetatable({}, {__mode = 'v'})   -- spare.ids: an order buffer of spare_n ids
local spare_n = 0
local loader_order = C.fnn_loader_order
local function order_of(self, n)
   local ids, cap = spare.ids, spare_n
   if ids ~= nil and cap >= n then
      spare.ids = nil
   else
      cap = math.max(n, 1)
      ids = ffi.new('int64_t[?]', cap)
   end
   local s = nil
   if self._shuffle and n > 1 then
      s = self._rng
      if s == nil then   -- one fresh stream per pass from fastnn's random source
         s = seed_state(floor(C.fnn_random_uniform() * 2^52))
      end
   end
   if loader_order(ids, n, s) ~= 0 then error(fnn_tensor.last_error(), 3) end
   return ids, cap
end
-- the order buffer of a pass that is over (nothing reads it again), for the next pass
-- (cap: the ids it holds; passed along, as ffi.sizeof of a buffer would stop the JIT's trace)
local function spare_order(ids, cap)
   if spare.ids == nil or spare_n < cap then spare.ids, spare_n = ids, cap end
end

-- ---------------------------------------------------------------------------
-- the slower dataset forms

local shape_buf = ffi.new('int64_t[8]')

-- stack a Lua list of items (tensors, numbers or nested tables) along a new dim 1
local function stack_items(items, n)
   local first = items[1]
   if istype(first) then
      local arr = ffi.new('const fnn_tensor *[?]', n)
      for i = 1, n do
         if not istype(items[i]) then error(('DataLoader: item %d is a %s, item 1 a tensor'):format(i, type(items[i])), 0) end
         arr[i - 1] = items[i]
      end
      local out = new()
      if C.fnn_stack(out, n, arr, 0) ~= 0 then error(fnn_tensor.last_error(), 0) end
      return done(out)
   end
   return fnn_tensor.tensor(items)
end

local function batch_by_get(ds, n, ids)
   local xs, ys = {}, {}
   for k = 1, n do xs[k], ys[k] = ds:get(tonumber(ids[k - 1])) end
   return stack_items(xs, n), ys[1] ~= nil and stack_items(ys, n) or nil
end

local function numel_of(shape)
   local e = 1
   for i = 1, #shape do e = e * shape[i] end
   return e
end

local function empty_batch(n, shape)
   shape_buf[0] = n
   for i = 1, #shape do shape_buf[i] = shape[i] end
   local out = new()
   if C.fnn_empty(out, #shape + 1, shape_buf) ~= 0 then fail() end
   return done(out)
end

local function batch_by_write(ds, n, ids)
   local ishape, tshape = ds.input_shape, ds.target_shape
   if type(ishape) ~= 'table' then
      error('DataLoader: a dataset with write() needs input_shape (the shape of one item)', 0)
   end
   local x = empty_batch(n, ishape)
   local xp, xe = C.fnn_tensor_mutable_data(x), numel_of(ishape)
   local y, yp, ye
   if tshape ~= nil then
      y = empty_batch(n, tshape)
      yp, ye = C.fnn_tensor_mutable_data(y), numel_of(tshape)
   end
   for k = 0, n - 1 do
      ds:write(tonumber(ids[k]), xp + k * xe, yp and (yp + k * ye) or nil)
   end
   return x, y
end

-- a CPU batch tensor to the loader's device: asynchronously through a pinned buffer
-- (fnn_to_device_async, the plain copy on the CPU or without the CUDA backend), else Tensor:to,
-- whose error names the device and whose out-of-memory path empties the cache and retries
local function send(t, dev)
   local out = new()
   if C.fnn_to_device_async(out, t, dev.id) == 0 then return done(out) end
   return t:to(dev)
end

-- ---------------------------------------------------------------------------

-- reuse on the main thread: every batch of the pass is written into the same two buffers (the
-- previous batch is over once the loop asks for the next), views of their first m rows held in the
-- same two headers, so a batch allocates nothing: no cdata, no finalizer, no table (iter() reuses
-- the batch table too). The headers are cleared (their references dropped) before each batch.
local clear = C.fnn_tensor_clear
-- Ctrl-C: under a host that set an interrupt flag (tensor.lua), done() polls it for every op, so a
-- compiled loop still stops at its next op. The reused headers never pass through done(): the
-- maker polls the flag itself, so a bare loop over a long pass stops at its next batch too
local host_flag = debug.getregistry()['fastnn.interrupt_flag']
local interrupt_flag = type(host_flag) == 'userdata' and ffi.cast('volatile int32_t *', host_flag) or nil
local function reuse_maker(ds, b)
   local kind, a, t, context, stride = ds:prefetch_source()
   context, stride = context or 0, stride or 0
   local xbuf, ybuf = ffi.gc(new(), clear), ffi.gc(new(), clear)
   local x, y = ffi.gc(new(), clear), ffi.gc(new(), clear)
   local take_into = C.fnn_take_batch_into
   return function(m, at)
      clear(x)
      clear(y)
      if take_into(x, y, xbuf, ybuf, kind, a, t, context, stride, m, at, b) ~= 0 then
         error(fnn_tensor.last_error(), 0)
      end
      if interrupt_flag ~= nil and interrupt_flag[0] ~= 0 then debug.getregistry()['fastnn.raise_interrupted']() end
      if y.ndim >= 0 then return x, y end
      return x, nil
   end
end

-- the batches of one pass from the background thread
local fnn_prefetch_next, fnn_prefetch_free = C.fnn_prefetch_next, C.fnn_prefetch_free
local function iter_prefetch(self, ids, cap, limit, device, batch_seed)
   local ds = self.dataset
   local pp = ffi.new('fnn_prefetch *[1]')
   local rc
   if ds.prefetch_images then   -- pictures (ImageFolder): every batch's seed drawn now, in order
      local nb = floor((limit + self.batch_size - 1) / self.batch_size)
      local seeds = ffi.new('uint64_t[?]', math.max(nb, 1))
      for k = 0, nb - 1 do seeds[k] = batch_seed() or floor(C.fnn_random_uniform() * 2^52) end
      rc = ds:prefetch_images(pp, limit, ids, self.batch_size, self._prefetch, self._workers, seeds)
   else
      local kind, a, t, context, stride = ds:prefetch_source()
      rc = (self._reuse and C.fnn_prefetch_new_reuse or C.fnn_prefetch_new)(pp, kind, a, t, context or 0, stride or 0,
                                                                             limit, ids, self.batch_size,
                                                                             self._prefetch, self._workers)
   end
   spare_order(ids, cap)   -- the workers took a copy
   if rc ~= 0 then error(fnn_tensor.last_error(), 3) end
   local p = ffi.gc(pp[0], fnn_prefetch_free)   -- an abandoned pass: the GC stops the thread
   local index = 0
   local function finish()
      ffi.gc(p, nil)
      fnn_prefetch_free(p)
      p = nil
   end
   -- reuse: one batch table and two pairs of headers, taking turns: the next batch is asked for
   -- in the pair the batch held does not use, so the last batch of a pass stays readable after it
   local batch, pairs_, turn
   if self._reuse then
      batch = setmetatable({}, Batch)
      pairs_ = {{ffi.gc(new(), clear), ffi.gc(new(), clear)}, {ffi.gc(new(), clear), ffi.gc(new(), clear)}}
      turn = 1
   end
   return function()
      if p == nil then return nil end
      local x, y
      if batch then
         turn = 3 - turn
         x, y = pairs_[turn][1], pairs_[turn][2]
         clear(x)
         clear(y)
      else
         x, y = new(), new()
      end
      if fnn_prefetch_next(p, x, y) ~= 0 then
         local msg = fnn_tensor.last_error()
         finish()
         error(msg, 2)
      end
      if x.ndim < 0 then finish() return nil end
      index = index + 1
      if batch then
         batch.inputs, batch.targets, batch.size = x, y.ndim >= 0 and y or nil, tonumber(x.shape_[0])
         if interrupt_flag ~= nil and interrupt_flag[0] ~= 0 then debug.getregistry()['fastnn.raise_interrupted']() end
         return batch, index
      end
      x = done(x)
      y = y.ndim >= 0 and done(y) or nil
      if device ~= nil then
         x = send(x, device)
         if y ~= nil then y = send(y, device) end
      end
      return setmetatable({inputs = x, targets = y, size = tonumber(x.shape_[0])}, Batch), index
   end
end

-- iter(): an iterator over one pass, yielding batch, batch_index
function DataLoader:iter(extra)
   if extra ~= nil then too_many('DataLoader:iter', 2, extra, 'loader') end
   local ds, b = self.dataset, self.batch_size
   local n = ds:len()
   local ids, cap = order_of(self, n)
   if self._shard then
      local all = ids
      ids, n = shard_ids(self, all, n)
      spare_order(all, cap)
      cap = math.max(n, 1)
   end
   local limit = self._drop_last and floor(n / b) * b or n
   local device = self._device ~= nil and parse_device('to_device', self._device) or nil
   if self._reuse then
      local refused = reuse_refusal(self)   -- the dataset's fields may have changed since
      if refused then error(refused, 2) end
      if device ~= nil and device.type == 'cpu' then device = nil end   -- already there: no copy
   end
   -- a dataset with random transforms (ImageFolder) gets a seed per batch: from the loader's own
   -- stream when seed(n) was given, so the augmented batches repeat; else it draws its own
   local rng = self._rng
   local function batch_seed()
      if rng ~= nil then return tonumber(next_u64(rng) % 4503599627370496ULL) end
      return nil
   end
   if self:is_prefetching() then
      local it = iter_prefetch(self, ids, cap, limit, device, batch_seed)   -- not a tail call: errors count levels from here
      return it
   end
   local make = self._reuse and reuse_maker(ds, b)
      or ds.take and (ds.wants_seed and function(m, at) return ds:take(m, at, batch_seed()) end
                      or function(m, at) return ds:take(m, at) end)
      or ds.write and function(m, at) return batch_by_write(ds, m, at) end
      or function(m, at) return batch_by_get(ds, m, at) end
   local pos, index = 0, 0
   if self._reuse then   -- one batch table for the pass, as the headers and buffers (device is nil)
      local batch = setmetatable({}, Batch)
      return function()
         if pos >= limit then
            if ids ~= nil then spare_order(ids, cap); ids = nil end
            return nil
         end
         local m = limit - pos < b and limit - pos or b
         batch.inputs, batch.targets = make(m, ids + pos)
         batch.size = m
         pos = pos + m
         index = index + 1
         return batch, index
      end
   end
   return function()
      if pos >= limit then
         if ids ~= nil then spare_order(ids, cap); ids = nil end
         return nil
      end
      local m = limit - pos < b and limit - pos or b
      local x, y = make(m, ids + pos)
      if device ~= nil then
         x = send(x, device)
         if y ~= nil then y = send(y, device) end
      end
      pos = pos + m
      index = index + 1
      return setmetatable({inputs = x, targets = y, size = m}, Batch), index
   end
end

function DataLoader:__tostring()
   return ('data.DataLoader(%d items, batch %d%s%s%s%s)'):format(self.dataset:len(), self.batch_size,
      self._shuffle and ', shuffled' or '', self._drop_last and ', drop_last' or '',
      self._reuse and ', reused buffers' or '',
      self._prefetch > 0 and (', prefetch %d%s%s'):format(self._prefetch,
         self._workers > 1 and (', %d workers'):format(self._workers) or '',
         self:is_prefetching() and '' or ' (main thread: a Lua dataset)') or '')
end

return DataLoader
