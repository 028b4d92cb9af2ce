package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/mnemo-dev/mnemo"
)

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request, profile string) error {
	set, err := s.e.Settings(r.Context(), profile)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, set)
	return nil
}

// patchSettings applies a partial update {key: value} to the profile's
// settings: validated as a whole (a bad field → 400 naming it and its
// range, nothing stored), persisted, and in force for the next request.
func (s *Server) patchSettings(w http.ResponseWriter, r *http.Request, profile string) error {
	var raw map[string]json.RawMessage
	if err := decodeJSON(r, &raw); err != nil {
		return err
	}
	if raw == nil {
		return badRequest("send a JSON object of settings, e.g. {\"keyword_weight\": 1.0}")
	}
	var named *string
	if v, ok := raw[paramProfile]; ok { // no setting is named profile
		var p string
		if err := json.Unmarshal(v, &p); err != nil {
			return badRequest("profile must be a string")
		}
		named = &p
		delete(raw, paramProfile)
	}
	var err error
	if profile, err = bodyProfile(r, profile, named); err != nil {
		return err
	}
	if len(raw) == 0 {
		return badRequest("no settings given: known settings are %s", strings.Join(mnemo.SettingNames(), ", "))
	}
	var reset []string
	for k, v := range raw {
		if string(v) == "null" {
			reset = append(reset, k)
		}
	}
	if len(reset) > 0 {
		if len(reset) < len(raw) {
			return badRequest("null resets a setting to its default: send the resets and the new values in separate requests")
		}
		slices.Sort(reset)
		next, err := s.e.ResetSettings(r.Context(), profile, reset)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, next)
		return nil
	}
	cur, err := s.e.Settings(r.Context(), profile)
	if err != nil {
		return err
	}
	kv, err := settingStrings(w, cur, raw, "")
	if err != nil {
		return err
	}
	next, err := s.e.UpdateSettings(r.Context(), profile, kv)
	if err != nil {
		return nameField(cur, kv, err)
	}
	writeJSON(w, http.StatusOK, next)
	return nil
}

// settingTypes maps each setting (its canonical name) to the JSON type it
// has in the Settings JSON: "number", "string" or "boolean".
func settingTypes(cur mnemo.Settings) map[string]string {
	b, err := json.Marshal(cur)
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = jsonType(v)
	}
	return out
}

func jsonType(v any) string {
	switch v.(type) {
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// settingStrings converts JSON setting values into the string form the
// engine validates, refusing values of the wrong JSON type (a string for a
// weight, a number for the strategy) with a message naming the field and
// what it accepts. prefix is put before field names in messages.
//
// A key in the camelCase of earlier releases is accepted, and noted in w's
// Mnemo-Deprecated header.
func settingStrings(w http.ResponseWriter, cur mnemo.Settings, raw map[string]json.RawMessage, prefix string) (map[string]string, error) {
	types := settingTypes(cur)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make(map[string]string, len(raw))
	for _, k := range keys {
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw[k]))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, badRequest("%s%s: %v", prefix, k, err)
		}
		var str string
		got := jsonType(v)
		switch x := v.(type) {
		case json.Number:
			str, got = x.String(), "number"
		case string:
			str = x
		case bool:
			str = fmt.Sprint(x)
		}
		name, _ := mnemo.SettingKey(k)
		if strings.Contains(name, "_") && !strings.Contains(k, "_") {
			deprecated(w, prefix+k, prefix+name)
		}
		want, known := types[name]
		if !known {
			// UpdateSettings names the unknown key and lists the known ones.
			kv[k] = str
			continue
		}
		if got != want {
			return nil, badRequest("%s%s = %s: wrong JSON type %s: %s", prefix, k, strings.TrimSpace(string(raw[k])), got, allowed(cur, k, str, got, want))
		}
		kv[k] = str
	}
	return kv, nil
}

// allowed describes what setting k accepts, from the engine's own
// validation message ("must be a number in [0, 5]", "must be one of …"),
// falling back to the JSON type.
func allowed(cur mnemo.Settings, k, str, got, want string) string {
	for _, probe := range []string{str, "NaN", "\x00"} {
		if _, err := cur.Apply(map[string]string{k: probe}); err != nil {
			if msg := err.Error(); strings.Contains(msg, "must be") {
				return msg[strings.Index(msg, "must be"):]
			}
		}
	}
	return "must be a JSON " + want
}

// nameField makes sure a validation error names the setting at fault: some
// validators speak of "importance mode" rather than importance_mode.
func nameField(cur mnemo.Settings, kv map[string]string, err error) error {
	if !errors.Is(err, mnemo.ErrInvalid) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), mnemo.ErrInvalid.Error()+": ")
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, e := cur.Apply(map[string]string{k: kv[k]}); e != nil {
			if !strings.Contains(strings.ToLower(msg), strings.ToLower(k)) {
				return badRequest("%s: %s", k, msg)
			}
			break
		}
	}
	return err
}
