-- What the specs that run programs share: files, shell quoting, and where the build's programs
-- are. A program `name` is $<env_var> when set, else the file of that name beside $FASTNN_LIB
-- (the build under test), else build/<name>; paths come back absolute.
local M = {}

function M.exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() return true end
   return false
end

function M.read_all(path) return (assert(M.try_read(path), 'cannot open ' .. path)) end

-- the file's bytes, or nil when it cannot be opened (missing, say)
function M.try_read(path)
   local f = io.open(path, 'rb')
   if not f then return nil end
   local s = f:read('*a')
   f:close()
   return s
end

function M.write_file(path, text)
   local f = assert(io.open(path, 'wb'))
   f:write(text)
   f:close()
end

-- a fresh path ending in suffix ('.lua'): os.tmpname's file is made to reserve the name, so it is
-- removed here (a name with a suffix appended left it behind in /tmp, a file per call)
function M.tmpname(suffix)
   local base = os.tmpname()
   os.remove(base)
   return base .. (suffix or '')
end

-- one shell word, whatever the string holds
function M.quote(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end

M.cwd = io.popen('pwd'):read('*l')
function M.absolute(path) return path:sub(1, 1) == '/' and path or (M.cwd .. '/' .. path) end
function M.dirname(path) return path:match('^(.*)/[^/]*$') or '.' end

-- the directory of the build under test: $FASTNN_LIB's, else build/
function M.build_dir()
   local lib = os.getenv('FASTNN_LIB')
   if lib and lib ~= '' then return M.absolute(M.dirname(lib)) end
   return M.absolute('build')
end

function M.program(name, env_var)
   local env = env_var and os.getenv(env_var)
   if env and env ~= '' then return M.absolute(env) end
   local lib = os.getenv('FASTNN_LIB')
   if lib and lib ~= '' then
      local beside = M.absolute(M.dirname(lib)) .. '/' .. name
      if M.exists(beside) then return beside end
   end
   return M.absolute('build/' .. name)
end

-- a new empty directory
function M.tmpdir() return io.popen('mktemp -d'):read('*l') end

return M
