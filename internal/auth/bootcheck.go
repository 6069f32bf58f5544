package auth

import (
	"fmt"
	"net"
	"strings"
)

// CheckListener applies the secure default at boot: with no API keys (keys == 0) the API
// listener must be loopback unless allowAnonymous is set. It returns whether anonymous access is
// allowed (the value for Config.AllowAnonymous) and, when the listener is public and anonymous, a
// warning the caller logs loudly at every boot.
func CheckListener(listen string, keys int, allowAnonymous bool) (anonymous bool, warning string, err error) {
	loopback := IsLoopback(listen)
	switch {
	case loopback:
		return true, "", nil
	case allowAnonymous:
		if keys == 0 {
			warning = fmt.Sprintf("auth.allow_anonymous is true: the API on %s answers requests without an API key as the default tenant; add API keys to settings_dir", listen)
		}
		return true, warning, nil
	case keys == 0:
		return false, "", fmt.Errorf("auth: server.listen %q is not a loopback address and no API keys are configured: add keys to settings_dir (wavehouse keys create), listen on 127.0.0.1, or set auth.allow_anonymous: true", listen)
	}
	return false, "", nil
}

// IsLoopback reports whether the listen address host:port binds only loopback interfaces. An
// empty host, 0.0.0.0 or :: bind every interface and are not loopback.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
