-- data.ImageFolder(root, {transform, extensions, on_error}): pictures in one sub-folder per class.
--   root/cat/1.jpg, root/cat/2.png, root/dog/a.jpg  ->  classes {'cat', 'dog'}, ids 1 and 2
-- Classes are the sub-folders sorted by name (byte order), with 1-based ids; ds.classes lists them,
-- ds:len() counts the pictures, ds:get(i) gives picture i (fastnn.image.load, then the transform)
-- and its class id, ds.files[i] and ds.targets[i] its path and id. Files are listed in name order
-- within each class, so the order does not depend on the filesystem.
-- With DataLoader, take(n, ids) decodes and transforms each picture in C and stacks them (on the
-- loader's prefetch thread with prefetch(k)):
-- batch.inputs is [N, C, H, W] (the transform must make every picture the same size) and
-- batch:labels() the class ids. Random transforms draw from the loader's stream: the loader
-- passes a seed per batch (DataLoader's seed(n) makes the augmented batches repeat).
-- on_error: 'error' (the default) raises, naming the file, when a picture cannot be decoded;
-- 'skip' decodes every picture once when the dataset is made and leaves out those that fail:
-- ds.skipped counts them and ds.skipped_files lists their paths and messages.
local ffi = require 'ffi'
local options = require 'fastnn.options'
local fnn_tensor = require 'fastnn.tensor'
local image = require 'fastnn.image'
local transforms = require 'fastnn.data.transforms'
local C = fnn_tensor.C
local too_many = fnn_tensor.too_many
local show = options.show

local ImageFolder = require('fastnn.class')('ImageFolder')
ImageFolder.wants_seed = true     -- DataLoader passes take() a seed from its stream

local OPTS = options.declare('data.ImageFolder', {
   {'transform', 'table', nil, 'a data.transforms transform (Compose{...}) run on each picture',
    check = function(v) if not transforms.is_transform(v) then return 'expected a data.transforms transform' end end},
   {'extensions', 'table', {'.png', '.jpg', '.jpeg'}, 'the file endings read (case-insensitive); others are ignored'},
   {'on_error', 'string', 'error', "a picture that cannot be decoded: 'error' raises, 'skip' leaves it out (counted)",
    values = {'error', 'skip'}},
})

local function quote(s) return "'" .. s:gsub("'", [['\'']]) .. "'" end

-- the names in dir of the given type ('d' directories, 'f' files), sorted by bytes
local function list(dir, kind)
   local p = io.popen(('find %s -mindepth 1 -maxdepth 1 -type %s -printf "%%f\\n" 2>/dev/null'):format(quote(dir), kind))
   local names = {}
   for l in p:lines() do names[#names + 1] = l end
   p:close()
   table.sort(names)
   return names
end

function ImageFolder.__new(cls, root, opts, extra)
   if extra ~= nil then too_many('data.ImageFolder', 3, extra, 'root, opts') end
   if type(root) ~= 'string' or root == '' then error('ImageFolder: expected a folder path, got ' .. show(root), 2) end
   local o = OPTS:check(opts, 2)
   root = root:gsub('/+$', '')
   local probe = io.open(root .. '/.', 'rb')
   if not probe then error(('ImageFolder: cannot open the folder %s'):format(root), 2) end
   probe:close()
   local exts = {}
   for i, e in ipairs(o.extensions) do
      if type(e) ~= 'string' then error(('ImageFolder: extension %d is %s, expected a string'):format(i, show(e)), 2) end
      exts[#exts + 1] = e:lower()
   end
   local function wanted(name)
      local low = name:lower()
      for _, e in ipairs(exts) do if low:sub(-#e) == e and #low > #e then return true end end
      return false
   end
   local self = setmetatable({root = root, classes = {}, class_to_id = {}, files = {}, targets = {},
                              transform = o.transform, on_error = o.on_error, skipped = 0, skipped_files = {}},
                             cls)
   for _, cls in ipairs(list(root, 'd')) do
      self.classes[#self.classes + 1] = cls
      local id = #self.classes
      self.class_to_id[cls] = id
      for _, f in ipairs(list(root .. '/' .. cls, 'f')) do
         if wanted(f) then
            local path = root .. '/' .. cls .. '/' .. f
            local ok, err = true, nil
            if o.on_error == 'skip' then ok, err = pcall(image.load, path) end
            if ok then
               self.files[#self.files + 1] = path
               self.targets[#self.targets + 1] = id
            else
               self.skipped = self.skipped + 1
               self.skipped_files[#self.skipped_files + 1] = {path = path, error = tostring(err)}
            end
         end
      end
   end
   if #self.classes == 0 then error(('ImageFolder: %s has no sub-folders (one per class expected)'):format(root), 2) end
   -- the C side: paths, ids and the transform's steps, shared with prefetch threads
   local n = #self.files
   local paths = ffi.new('const char *[?]', math.max(n, 1))
   local labels = ffi.new('int64_t[?]', math.max(n, 1))
   for i = 1, n do paths[i - 1], labels[i - 1] = self.files[i], self.targets[i] end
   local tf = o.transform
   local pp = ffi.new('fnn_image_set *[1]')
   if C.fnn_image_set_new(pp, n, paths, labels, tf and tf.n or 0, tf and tf.c_steps or nil) ~= 0 then
      error(fnn_tensor.last_error(), 2)
   end
   self._set = ffi.gc(pp[0], C.fnn_image_set_free)
   return self
end

function ImageFolder:len(extra)
   if extra ~= nil then too_many('ImageFolder:len', 2, extra, 'dataset') end
   return #self.files
end

local function load_one(self, i, state)
   local x = image.load(self.files[i])
   if self.transform then x = self.transform:apply(x, state) end
   return x
end

-- item i (1-based): the picture (transformed) and its class id
function ImageFolder:get(i, extra)
   if extra ~= nil then too_many('ImageFolder:get', 3, extra, 'dataset, i') end
   if type(i) ~= 'number' or i ~= math.floor(i) or i < 1 or i > #self.files then
      error(('ImageFolder:get: index %s outside 1..%d'):format(show(i), #self.files), 2)
   end
   return load_one(self, i, nil), self.targets[i]
end

-- take(n, ids, seed): pictures ids[0..n-1] stacked [n, C, H, W], and their class ids (float [n]),
-- made in C (fnn_image_take: no Lua per picture). Item k's random state is derived from seed and k,
-- so a batch depends only on its seed and ids; seed nil: one draw from fastnn's random source.
function ImageFolder:take(n, ids, seed, extra)
   if extra ~= nil then too_many('ImageFolder:take', 5, extra, 'dataset, n, ids, seed') end
   if seed == nil then seed = math.floor(C.fnn_random_uniform() * 2^52) end
   local x, y = fnn_tensor.new(), fnn_tensor.new()
   if C.fnn_image_take(x, y, self._set, n, ids, seed) ~= 0 then error(fnn_tensor.last_error(), 0) end
   return fnn_tensor.done(x), fnn_tensor.done(y)
end

-- DataLoader's prefetch: C threads (`workers` of them) make the batches of a pass (the order ids[0..n), seeds[k] for
-- batch k) with the same fnn_image_take
function ImageFolder:prefetch_images(pp, n, ids, batch, depth, workers, seeds, extra)
   if extra ~= nil then
      too_many('ImageFolder:prefetch_images', 9, extra, 'dataset, pp, n, ids, batch, depth, workers, seeds')
   end
   return C.fnn_prefetch_new_images(pp, self._set, n, ids, batch, depth, workers, seeds)
end

function ImageFolder:__tostring()
   return ('data.ImageFolder(%s: %d pictures, %d classes%s)'):format(self.root, #self.files, #self.classes,
      self.skipped > 0 and (', %d skipped'):format(self.skipped) or '')
end

return ImageFolder
