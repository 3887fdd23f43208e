-- Canary annotations for ingress-nginx.
--
-- obj.annotations  current annotations of the canary Ingress
-- obj.weight       percentage of traffic for the canary, as a string; "-1" when the step sets none
-- obj.matches      HttpRouteMatch list: {path, headers = {{type, name, value}}, queryParams}
-- Returns the complete new annotation map. Every canary key is recomputed, so nothing set by an earlier
-- step lingers.

local prefix = "nginx.ingress.kubernetes.io/"
local canaryKeys = {
  "canary-by-cookie", "canary-by-header", "canary-by-header-pattern", "canary-by-header-value", "canary-weight",
}

local annotations = {}
for key, value in pairs(obj.annotations or {}) do
  annotations[key] = value
end
for _, key in ipairs(canaryKeys) do
  annotations[prefix .. key] = nil
end

annotations[prefix .. "canary"] = "true"
if obj.weight ~= nil and obj.weight ~= "-1" then
  annotations[prefix .. "canary-weight"] = obj.weight
end

-- ingress-nginx routes on one cookie and one header per canary Ingress: a match contributes its first header
-- (a header named canary-by-cookie names the cookie), and with several matches the last one wins. Paths and
-- query parameters cannot be expressed.
for _, match in ipairs(obj.matches or {}) do
  local header = match.headers and match.headers[1]
  if header and header.name == "canary-by-cookie" then
    annotations[prefix .. "canary-by-cookie"] = header.value
  elseif header then
    annotations[prefix .. "canary-by-header"] = header.name
    local regex = header.type == "RegularExpression"
    annotations[prefix .. "canary-by-header-pattern"] = regex and header.value or nil
    annotations[prefix .. "canary-by-header-value"] = (not regex) and header.value or nil
  end
end

return annotations
