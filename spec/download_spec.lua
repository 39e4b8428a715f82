-- Downloads (core/io/download.c through data.download, Mnist and FashionMnist) against a loopback
-- HTTP server this spec starts itself (spec/http_fixture.py on 127.0.0.1, a free port), serving
-- IDX gz files written here. Nothing here reaches past 127.0.0.1. Checksums are compared with
-- md5sum/sha256sum, not with the code under test.
local fnn = require 'fastnn'
local ffi = require 'ffi'
local data = fnn.data

pcall(ffi.cdef, 'int usleep(unsigned int usec);')

local function sh(cmd) return os.execute(cmd) == 0 end
local function read_cmd(cmd)
   local p = io.popen(cmd)
   local out = p:read('*a')
   p:close()
   return out
end
local process = require 'spec.process'
local write, read = process.write_file, process.try_read   -- read: nil when missing
local function md5sum(path) return read_cmd(('md5sum %q'):format(path)):match('^(%x+)') end
local function sha256sum(path) return read_cmd(('sha256sum %q'):format(path)):match('^(%x+)') end
local function tmpdir()
   local d = os.tmpname()
   os.remove(d)
   assert(sh(('mkdir -p %q'):format(d)))
   return d
end
local function ls(dir) return read_cmd(('ls -A %q 2>/dev/null'):format(dir)) end
local function now()
   local p = io.popen('date +%s.%N')
   local t = tonumber(p:read('*a'))
   p:close()
   return t
end

local function be32(n)
   return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end
-- an IDX file of unsigned bytes: value(k) for the k-th byte (1-based)
local function idx_bytes(dims, value, magic_type)
   local parts = {string.char(0, 0, magic_type or 8, #dims)}
   for _, d in ipairs(dims) do parts[#parts + 1] = be32(d) end
   local n = 1
   for _, d in ipairs(dims) do n = n * d end
   local body = {}
   for k = 1, n do body[k] = string.char(value(k)) end
   parts[#parts + 1] = table.concat(body)
   return table.concat(parts)
end
local function write_gz(path, bytes)
   write(path .. '.raw', bytes)
   assert(sh(('gzip -n -c %q > %q && rm %q'):format(path .. '.raw', path, path .. '.raw')))
end

-- the fixture: 12 training and 5 test images with known pixels and labels
local NTRAIN, NTEST = 12, 5
local function pixel(img, k) return (img * 31 + k * 7) % 256 end
local function label(img) return (img * 3) % 10 end
local function make_split(dir, prefix, n, dims)
   dims = dims or {n, 28, 28}
   local per = dims[2] * dims[3]
   write_gz(dir .. '/' .. prefix .. '-images-idx3-ubyte.gz',
            idx_bytes(dims, function(k) return pixel(math.floor((k - 1) / per) + 1, (k - 1) % per + 1) end))
   write_gz(dir .. '/' .. prefix .. '-labels-idx1-ubyte.gz', idx_bytes({n}, function(k) return label(k) end))
end
local NAMES = {'train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz',
               't10k-labels-idx1-ubyte.gz'}
-- a resource list as Lua source, for a child process
local function resources_literal(list)
   local parts = {}
   for _, r in ipairs(list) do parts[#parts + 1] = ('{%q,%q}'):format(r[1], r[2]) end
   return '{' .. table.concat(parts, ',') .. '}'
end
local function resources_of(dir)
   local r = {}
   for i, name in ipairs(NAMES) do r[i] = {name, md5sum(dir .. '/' .. name)} end
   return r
end

-- ---- the server ----
local server = {}
function server.start(root)
   local state = tmpdir()
   server.state, server.log = state, state .. '/requests.log'
   write(server.log, '')
   local script = 'spec/http_fixture.py'
   assert(sh(('python3 %s %q %q %q 120 >/dev/null 2>&1 & echo $! > %q'):format(
      script, root, state .. '/port', server.log, state .. '/pid')))
   server.pid = tonumber(read(state .. '/pid'))
   for _ = 1, 200 do          -- up to 10 s for python to start
      local port = read(state .. '/port')
      if port and tonumber(port) then
         server.port = tonumber(port)
         server.base = ('http://127.0.0.1:%d/'):format(server.port)
         return
      end
      ffi.C.usleep(50000)
   end
   error('the loopback server did not start')
end
function server.stop()
   if server.pid then sh(('kill %d 2>/dev/null'):format(server.pid)) end
   server.pid = nil
   if server.state then sh(('rm -rf %q'):format(server.state)) end
end
function server.requests()
   local lines = {}
   for line in (read(server.log) or ''):gmatch('[^\n]+') do lines[#lines + 1] = line end
   return lines
end
function server.clear() write(server.log, '') end

describe('downloads from a loopback server', function()
   local root, cache
   local saved = {}

   setup(function()
      root = tmpdir()
      make_split(root, 'train', NTRAIN)
      make_split(root, 't10k', NTEST)
      server.start(root)
      saved.mirrors, saved.resources = data.Mnist.mirrors, data.Mnist.resources
      saved.fm = {data.FashionMnist.mirrors, data.FashionMnist.resources, data.FashionMnist.SYSTEM_DIR}
      saved.progress = data.defaults.progress
      data.defaults.progress = false
   end)

   teardown(function()
      server.stop()
      data.Mnist.mirrors, data.Mnist.resources = saved.mirrors, saved.resources
      data.FashionMnist.mirrors, data.FashionMnist.resources, data.FashionMnist.SYSTEM_DIR = unpack(saved.fm)
      data.defaults.progress = saved.progress
      data.set_dir(nil)
      sh(('rm -rf %q'):format(root))
   end)

   before_each(function()
      cache = tmpdir()
      data.set_dir(cache)
      data.Mnist.resources = resources_of(root)
      data.Mnist.set_mirrors{server.base .. 'ok/'}
      server.clear()
   end)
   after_each(function() sh(('rm -rf %q'):format(cache)) end)

   local function check_mnist(ds, n)
      assert.equals(n, ds:len())
      assert.same({n, 1, 28, 28}, ds.inputs:shape())
      assert.equals('int64', ds.targets:dtype())
      local x = ds.inputs:to_flat()
      for _, img in ipairs{1, n} do
         for _, k in ipairs{1, 2, 400, 784} do
            assert.is_true(math.abs(x[(img - 1) * 784 + k] - pixel(img, k) / 255) < 1e-6)
         end
      end
      local y = ds.targets:to_table()
      for i = 1, n do assert.equals(label(i) + 1, y[i]) end
   end

   it('downloads the four files on the first load, verified; then the cache answers with no request', function()
      check_mnist(data.Mnist.load('train'), NTRAIN)
      local reqs = server.requests()
      assert.equals(4, #reqs)
      for i, name in ipairs(NAMES) do
         assert.equals(('GET /ok/%s range=-'):format(name), reqs[i])
         assert.equals(md5sum(root .. '/' .. name), md5sum(cache .. '/mnist/' .. name))
      end
      assert.is_nil(ls(cache .. '/mnist'):match('%.part'))
      check_mnist(data.Mnist.load('test'), NTEST)
      check_mnist(data.Mnist.load('train'), NTRAIN)
      assert.equals(4, #server.requests())
      -- with no reachable mirror at all, the cache still answers
      data.Mnist.set_mirrors{'http://127.0.0.1:1/'}
      check_mnist(data.Mnist.load('test'), NTEST)
      assert.equals(4, #server.requests())
   end)

   it('$FASTNN_DATA picks the cache directory of a fresh process', function()
      local code = ('package.path = %q; local data = require("fastnn").data; data.defaults.progress = false; '
                    .. 'data.Mnist.resources = %s; data.Mnist.set_mirrors{%q}; '
                    .. 'local ds = data.Mnist.load("test"); io.write(ds:len(), " ", data.dir())'):format(
         package.path, resources_literal(data.Mnist.resources), server.base .. 'ok/')
      local out = read_cmd(('FASTNN_DATA=%q luajit -e %q 2>&1'):format(cache .. '/env', code))
      assert.equals(NTEST .. ' ' .. cache .. '/env', out)
      assert.equals(md5sum(root .. '/t10k-images-idx3-ubyte.gz'), md5sum(cache .. '/env/mnist/t10k-images-idx3-ubyte.gz'))
   end)

   it('falls through a mirror that 404s to the next one', function()
      data.Mnist.set_mirrors{server.base .. 'missing/', server.base .. 'ok/'}
      check_mnist(data.Mnist.load('train'), NTRAIN)
      local reqs = server.requests()
      assert.equals(8, #reqs)
      for i, name in ipairs(NAMES) do
         assert.equals(('GET /missing/%s range=-'):format(name), reqs[2 * i - 1])
         assert.equals(('GET /ok/%s range=-'):format(name), reqs[2 * i])
      end
   end)

   it('follows redirects', function()
      data.Mnist.set_mirrors{server.base .. 'redirect/'}
      check_mnist(data.Mnist.load('test'), NTEST)
      assert.equals(8, #server.requests())
   end)

   it('refuses a checksum mismatch, naming the file, the URL and both digests, and keeps no file', function()
      data.Mnist.resources[1] = {NAMES[1], string.rep('ab', 16)}
      local ds, err = data.Mnist.try_load('train')
      assert.is_nil(ds)
      assert.matches('Mnist: download: cannot fetch train%-images%-idx3%-ubyte%.gz from its mirror: ', err)
      assert.matches(server.base:gsub('%p', '%%%0') .. 'ok/train%-images%-idx3%-ubyte%.gz: md5 mismatch %(got '
                     .. md5sum(root .. '/' .. NAMES[1]) .. ', expected ' .. string.rep('ab', 16) .. '%)', err)
      assert.equals('', ls(cache .. '/mnist'))
      local ok = pcall(data.Mnist.load, 'train')
      assert.is_false(ok)
   end)

   it('replaces a corrupted file in the cache', function()
      check_mnist(data.Mnist.load('test'), NTEST)
      local p = cache .. '/mnist/' .. NAMES[3]
      local bytes = read(p)
      write(p, bytes:sub(1, 19) .. string.char((bytes:byte(20) + 1) % 256) .. bytes:sub(21))
      server.clear()
      check_mnist(data.Mnist.load('test'), NTEST)
      assert.same({'GET /ok/' .. NAMES[3] .. ' range=-'}, server.requests())
      assert.equals(md5sum(root .. '/' .. NAMES[3]), md5sum(p))
   end)

   it('reports a truncated gzip and a wrong IDX magic or dimension clearly, naming the file', function()
      local bad = tmpdir()
      sh(('cp %q/* %q/'):format(root, bad))
      local bytes = read(bad .. '/' .. NAMES[1])
      write(bad .. '/' .. NAMES[1], bytes:sub(1, math.floor(#bytes / 2)))
      server.stop()
      server.start(bad)
      data.Mnist.set_mirrors{server.base .. 'ok/'}
      data.Mnist.resources = resources_of(bad)
      local _, err = data.Mnist.try_load('train')
      assert.matches('^Mnist: read_idx: .*/mnist/train%-images%-idx3%-ubyte%.gz: truncated, expected 9408 bytes of data', err)
      -- a wrong magic: a PNG header where the IDX header should be
      sh(('rm -rf %q/mnist'):format(cache))
      write_gz(bad .. '/' .. NAMES[3], '\137PNG\r\n\26\n' .. string.rep('\0', 64))
      data.Mnist.resources = resources_of(bad)
      _, err = data.Mnist.try_load('test')
      assert.matches('^Mnist: read_idx: .*/t10k%-images%-idx3%-ubyte%.gz: bad magic 0x89504e47 %(not an IDX file%)', err)
      -- a wrong dimension: 27x27 images
      sh(('rm -rf %q/mnist'):format(cache))
      make_split(bad, 't10k', NTEST, {NTEST, 27, 27})
      data.Mnist.resources = resources_of(bad)
      _, err = data.Mnist.try_load('test')
      assert.matches('^Mnist: .*/t10k%-images%-idx3%-ubyte%.gz holds %[5,27,27%], expected images %[N,28,28%]', err)
      -- labels that do not match the images
      sh(('rm -rf %q/mnist'):format(cache))
      make_split(bad, 't10k', NTEST)
      write_gz(bad .. '/' .. NAMES[4], idx_bytes({NTEST + 1}, label))
      data.Mnist.resources = resources_of(bad)
      _, err = data.Mnist.try_load('test')
      assert.matches('^Mnist: .*/t10k%-labels%-idx1%-ubyte%.gz holds %[6%], expected labels %[5%]', err)
      server.stop()
      server.start(root)
      sh(('rm -rf %q'):format(bad))
   end)

   it('errors with the URL, within the timeout, when the host refuses or never answers', function()
      data.Mnist.set_mirrors{'http://127.0.0.1:1/'}
      local t0 = now()
      local ds, err = data.Mnist.try_load('train', {connect_timeout = 1, timeout = 2})
      assert.is_nil(ds)
      assert.matches('http://127%.0%.0%.1:1/train%-images%-idx3%-ubyte%.gz: .*onnect', err)
      assert.is_true(now() - t0 < 3)
      assert.equals('', ls(cache .. '/mnist'))
      -- a server that accepts and then says nothing: the overall timeout ends it
      data.Mnist.set_mirrors{server.base .. 'hang/'}
      t0 = now()
      ds, err = data.Mnist.try_load('train', {connect_timeout = 1, timeout = 0.5})
      assert.is_nil(ds)
      assert.matches(server.base:gsub('%p', '%%%0') .. 'hang/train%-images%-idx3%-ubyte%.gz: timed out', err)
      assert.is_true(now() - t0 < 3, 'took ' .. (now() - t0) .. ' s')
   end)

   it('resumes a partial file with a Range request', function()
      local name = NAMES[1]
      local full = read(root .. '/' .. name)
      local half = math.floor(#full / 2)
      sh(('mkdir -p %q'):format(cache .. '/mnist'))
      write(cache .. '/mnist/' .. name .. '.part', full:sub(1, half))
      check_mnist(data.Mnist.load('train'), NTRAIN)
      local reqs = server.requests()
      assert.equals(('GET /ok/%s range=bytes=%d-'):format(name, half), reqs[1])
      assert.equals(md5sum(root .. '/' .. name), md5sum(cache .. '/mnist/' .. name))
      assert.is_nil(read(cache .. '/mnist/' .. name .. '.part'))
   end)

   it('keeps a cut transfer and resumes it on the next call', function()
      data.Mnist.set_mirrors{server.base .. 'cut/'}
      local ds, err = data.Mnist.try_load('train')
      assert.is_nil(ds)
      assert.matches('cut/train%-images%-idx3%-ubyte%.gz: transfer closed', err)
      local full = read(root .. '/' .. NAMES[1])
      local part = read(cache .. '/mnist/' .. NAMES[1] .. '.part')
      assert.equals(math.floor(#full / 2), #part)
      assert.is_nil(read(cache .. '/mnist/' .. NAMES[1]))
      data.Mnist.set_mirrors{server.base .. 'ok/'}
      server.clear()
      check_mnist(data.Mnist.load('train'), NTRAIN)
      assert.equals(('GET /ok/%s range=bytes=%d-'):format(NAMES[1], #part), server.requests()[1])
   end)

   it('starts over when the server ignores the Range request', function()
      sh(('mkdir -p %q'):format(cache .. '/mnist'))
      write(cache .. '/mnist/' .. NAMES[2] .. '.part', 'stale bytes from somewhere else')
      data.Mnist.set_mirrors{server.base .. 'norange/'}
      check_mnist(data.Mnist.load('train'), NTRAIN)
      assert.matches('range=bytes=31%-', server.requests()[2])
      assert.equals(md5sum(root .. '/' .. NAMES[2]), md5sum(cache .. '/mnist/' .. NAMES[2]))
   end)

   it('prints one line per file when stderr is not a terminal', function()
      local code = ('package.path = %q; local data = require("fastnn").data; data.set_dir(%q); '
                    .. 'data.Mnist.resources = %s; data.Mnist.set_mirrors{%q, %q}; '
                    .. 'io.write(data.Mnist.load("test"):len())'):format(
         package.path, cache, resources_literal(data.Mnist.resources), server.base .. 'missing/', server.base .. 'ok/')
      local errfile = cache .. '/stderr'
      local out = read_cmd(('luajit -e %q 2>%q'):format(code, errfile))
      assert.equals(tostring(NTEST), out)
      local lines = {}
      for line in read(errfile):gmatch('[^\n]+') do lines[#lines + 1] = line end
      assert.equals(8, #lines)
      for i, name in ipairs(NAMES) do
         assert.matches('^download: ' .. server.base:gsub('%p', '%%%0') .. 'missing/' .. name:gsub('%p', '%%%0')
                        .. ' failed: HTTP 404; trying the next mirror$', lines[2 * i - 1])
         assert.matches('^download: ' .. server.base:gsub('%p', '%%%0') .. 'ok/' .. name:gsub('%p', '%%%0')
                        .. ' %-> .*/mnist/' .. name:gsub('%p', '%%%0') .. ' %(%d+%.%d MB, %d+%.%d s%)$', lines[2 * i])
      end
   end)

   it('draws a progress bar on stderr when asked (what a terminal gets)', function()
      local code = ('package.path = %q; local data = require("fastnn").data; '
                    .. 'io.write(tostring(data.try_download({%q}, %q, {progress = "bar"})))'):format(
         package.path, server.base .. 'ok/' .. NAMES[1], cache .. '/bar/' .. NAMES[1])
      local errfile = cache .. '/stderr'
      local out = read_cmd(('luajit -e %q 2>%q'):format(code, errfile))
      assert.equals(cache .. '/bar/' .. NAMES[1], out)
      local text = read(errfile)
      assert.matches('\r' .. NAMES[1]:gsub('%p', '%%%0') .. ' +%[=+%] 100%% +%d+%.%d/%d+%.%d MB +%d+%.%d MB/s\n$', text)
      assert.is_nil(text:find('download: ', 1, true))
   end)

   it('FashionMnist downloads into the data directory when neither the package nor the cache has it', function()
      data.FashionMnist.SYSTEM_DIR = cache .. '/no-such-dir'
      data.FashionMnist.resources = resources_of(root)
      data.FashionMnist.set_mirrors{server.base .. 'ok/'}
      local ds = data.FashionMnist.load('test')
      check_mnist(ds, NTEST)
      assert.equals('Ankle boot', ds.classes[10])
      assert.equals(4, #server.requests())
      assert.equals(md5sum(root .. '/' .. NAMES[3]), md5sum(cache .. '/fashion-mnist/' .. NAMES[3]))
      data.FashionMnist.load('train')
      assert.equals(4, #server.requests())
      data.FashionMnist.SYSTEM_DIR = saved.fm[3]
   end)

   it('data.download checks its arguments and digests in both forms', function()
      local dest = cache .. '/one/two/f.gz'
      assert.equals(dest, data.download({server.base .. 'ok/' .. NAMES[2]}, dest, {sha256 = sha256sum(root .. '/' .. NAMES[2])}))
      assert.equals(sha256sum(root .. '/' .. NAMES[2]), sha256sum(dest))
      assert.has_error(function() data.download(server.base .. 'ok/x', cache .. '/x', {md5 = 'xyz'}) end,
                       "download: digest 'md5:xyz': a md5 digest has 32 hex digits, got 3")
      assert.has_error(function() data.download(server.base .. 'ok/x', cache .. '/x', {digest = 'crc32:00'}) end,
                       "download: digest 'crc32:00': algorithm 'crc32' not supported (md5 or sha256)")
      assert.has_error(function() data.download({}, cache .. '/x') end,
                       'download: ' .. cache .. '/x is not there and no mirror was given')
      assert.has_error(function() data.Mnist.set_mirrors{'ftp://example/'} end,
                       'Mnist.set_mirrors: mirror 1 is ftp://example/, expected an http:// or https:// URL')
      local _, err = data.try_download(server.base .. 'missing/x', cache .. '/x')
      assert.matches('x: HTTP 404$', err)
   end)

   it('file_digest agrees with md5sum and sha256sum', function()
      for _, name in ipairs(NAMES) do
         local p = root .. '/' .. name
         assert.equals(md5sum(p), data.file_digest(p, 'md5'))
         assert.equals(sha256sum(p), data.file_digest(p, 'sha256'))
      end
      local h, err = data.file_digest(root .. '/nope', 'md5')
      assert.is_nil(h)
      assert.matches('file_digest: .*/nope: cannot open %(No such file or directory%)', err)
   end)
end)
