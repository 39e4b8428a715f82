-- fastnn.data: datasets and batching.
--   local ds = data.FashionMnist.load('train')          -- a TensorDataset, inputs [N,1,28,28]
--   for batch in data.DataLoader(ds, 128):shuffle(true):prefetch(2):iter() do ... batch.inputs, batch.targets ... end
-- A dataset is a table with len() and either get(i) -> input, target or the
-- fast write(i, input_slot, target_slot) (see DataLoader.lua). Classes live one
-- per file in lua/fastnn/data/<Name>.lua and load on first use: TensorDataset,
-- DataLoader, Mnist, FashionMnist, TextDataset, CsvDataset.
--
-- Files fetched from the network live under the data directory:
--   data.dir()                 $FASTNN_DATA, else ~/.cache/fastnn (or what set_dir chose)
--   data.set_dir(path)         nil goes back to the default
--   data.download(urls, dest, {md5 = hex | sha256 = hex, connect_timeout = s, timeout = s, progress = p})
--       dest becomes a verified copy of the first mirror that serves it (see fnn_download in
--       fastnn.h: cache check, resume, checksum before rename); try_download returns nil, err.
--       progress: 'auto' (a bar on a terminal, else a line per file), 'bar', 'line', false.
--   data.defaults              connect_timeout (15 s), timeout (600 s per mirror), progress ('auto')
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local C = require 'fastnn.C'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last: refused, never dropped

local data = {}

require('fastnn.lazy')(data, 'fastnn.data')   -- data.Mnist, data.DataLoader, ...: loaded on first use

data.defaults = {connect_timeout = 15, timeout = 600, progress = 'auto'}

local chosen_dir = nil

function data.dir(extra)
   if extra ~= nil then too_many('data.dir', 1, extra, '') end
   if chosen_dir then return chosen_dir end
   local env = os.getenv('FASTNN_DATA')
   if env and env ~= '' then return env end
   local home = os.getenv('HOME')
   if home and home ~= '' then return home .. '/.cache/fastnn' end
   return '.fastnn-data'
end

function data.set_dir(path, extra)
   if extra ~= nil then too_many('data.set_dir', 2, extra, 'path') end
   if path ~= nil and (type(path) ~= 'string' or path == '') then
      error(('data.set_dir: expected a directory path or nil, got %s'):format(show_value(path)), 2)
   end
   chosen_dir = path and (path:gsub('/+$', '')) or nil
   if chosen_dir == '' then chosen_dir = '/' end
end

local PROGRESS = {[false] = 0, quiet = 0, auto = 1, [true] = 1, bar = 2, line = 3}

-- nil, err on anything from outside (network, files); a programming mistake raises at level
local DOWNLOAD_OPTS = require('fastnn.options').declare('data.download', {
   {'digest', 'string', nil, "the expected digest, 'md5:<hex>' or 'sha256:<hex>'"},
   {'md5', 'string', nil, 'the expected MD5 (hex)'},
   {'sha256', 'string', nil, 'the expected SHA-256 (hex)'},
   {'progress', 'boolean|string', nil, "true/'auto', 'bar', 'line', false/'quiet'", values = {'auto', 'bar', 'line', 'quiet'},
    default_doc = 'data.defaults.progress'},
   {'timeout', 'number', nil, 'seconds for a whole file', min = 0, default_doc = 'data.defaults.timeout'},
   {'connect_timeout', 'number', nil, 'seconds to connect', min = 0, default_doc = 'data.defaults.connect_timeout'},
})

local function try_download(urls, dest, opts, level)
   opts = DOWNLOAD_OPTS:check(opts, level)
   if type(urls) == 'string' then urls = {urls} end
   if type(urls) ~= 'table' then error('download: expected a URL or a list of mirror URLs', level) end
   if type(dest) ~= 'string' or dest == '' then error('download: expected a destination path', level) end
   local n = #urls
   local arr = ffi.new('const char *[?]', math.max(n, 1))
   for i = 1, n do
      if type(urls[i]) ~= 'string' then error(('download: mirror %d is a %s, expected a URL'):format(i, type(urls[i])), level) end
      arr[i - 1] = urls[i]
   end
   local digest = opts.digest or (opts.md5 and 'md5:' .. opts.md5) or (opts.sha256 and 'sha256:' .. opts.sha256)
   local d = data.defaults
   local progress = opts.progress
   if progress == nil then progress = d.progress end
   local mode = PROGRESS[progress]
   if mode == nil then
      error(("download: progress is %s, expected 'auto', 'bar', 'line' or false"):format(show_value(progress)), level)
   end
   local rc = C.fnn_download(dest, n, arr, digest, opts.connect_timeout or d.connect_timeout,
                             opts.timeout or d.timeout, mode)
   if rc ~= 0 then return nil, ffi.string(C.fnn_last_error()) end
   return dest
end

function data.try_download(urls, dest, opts, extra)
   if extra ~= nil then too_many('data.try_download', 4, extra, 'urls, dest, opts') end
   local path, err = try_download(urls, dest, opts, 3)   -- not a tail call: level 3 is the caller
   return path, err
end

function data.download(urls, dest, opts, extra)
   if extra ~= nil then too_many('data.download', 4, extra, 'urls, dest, opts') end
   local path, err = try_download(urls, dest, opts, 3)
   if not path then error(err, 2) end
   return path
end

-- the hex digest of a file ('md5' or 'sha256', through OpenSSL's libcrypto), or nil, err
function data.file_digest(path, algo, extra)
   if extra ~= nil then too_many('data.file_digest', 3, extra, 'path, algo') end
   local buf = ffi.new('char[129]')
   if C.fnn_file_digest(path, algo or 'sha256', buf, 129) ~= 0 then return nil, ffi.string(C.fnn_last_error()) end
   return ffi.string(buf)
end

package.loaded['fastnn.data'] = data
return data
