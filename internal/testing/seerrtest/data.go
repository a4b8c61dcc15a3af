package seerrtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The titles the stand-in knows, as Seerr's MovieResult and TvResult
// (seerr-api.yml:713-804) carry them. Superman is on the media server
// already (mediaInfo status 5, AVAILABLE; MediaInfo, :1269-1290) as
// media 7.
var (
	mk2026 = movie(931285, "Mortal Kombat II", "2026-05-15", 7.4,
		"Fan favorite champions — now joined by Johnny Cage himself — are pitted against one another in the ultimate, no-holds-barred, gory battle to defeat the dark rule of Shao Kahn.")
	mk2021 = movie(460465, "Mortal Kombat", "2021-04-07", 7.0,
		"Washed-up MMA fighter Cole Young, unaware of his heritage, seeks out Earth's greatest champions in order to stand against the enemies of Outworld.")
	mk1995 = movie(9312, "Mortal Kombat", "1995-08-18", 5.9,
		"For nine generations an evil sorcerer has been victorious in hand-to-hand battle against his mortal enemies.")
	mk1997 = movie(9823, "Mortal Kombat: Annihilation", "1997-11-21", 3.9,
		"Six heroes from the first movie are joined by several new ones to stop the evil Outworld emperor Shao Kahn.")
	superman = withMedia(movie(1061474, "Superman", "2025-07-09", 7.5,
		"Superman, a journalist in Metropolis, embarks on a journey to reconcile his Kryptonian heritage with his human upbringing."), 7, 5)
	lastOfUs = map[string]any{"id": 100088, "mediaType": "tv", "name": "The Last of Us", "originalName": "The Last of Us",
		"firstAirDate": "2023-01-15", "voteAverage": 8.6, "voteCount": 6000, "popularity": 300.5, "originalLanguage": "en",
		"originCountry": []string{"US"}, "genreIds": []int{18}, "posterPath": "/last.jpg", "backdropPath": "/last-b.jpg",
		"overview": "Twenty years after modern civilization has been destroyed, Joel, a hardened survivor, is hired to smuggle Ellie out of a quarantine zone."}
	person = map[string]any{"id": 976, "mediaType": "person", "adult": false, "profilePath": "/p.jpg", "knownFor": []any{}}

	movies = map[int]map[string]any{931285: mk2026, 460465: mk2021, 9312: mk1995, 9823: mk1997, 1061474: superman}
)

func movie(id int, title, date string, vote float64, overview string) map[string]any {
	return map[string]any{"id": id, "mediaType": "movie", "title": title, "originalTitle": title, "releaseDate": date,
		"voteAverage": vote, "voteCount": 1200, "popularity": 250.1, "originalLanguage": "en", "genreIds": []int{28, 14},
		"adult": false, "video": false, "posterPath": "/poster.jpg", "backdropPath": "/backdrop.jpg", "overview": overview}
}

func withMedia(m map[string]any, mediaID, status int) map[string]any {
	m["mediaInfo"] = map[string]any{"id": mediaID, "tmdbId": m["id"], "mediaType": m["mediaType"], "status": status, "requests": []any{}}
	return m
}

// page is a paged result list (seerr-api.yml:5972-5990).
func page(results ...map[string]any) map[string]any {
	return map[string]any{"page": 1, "totalPages": 1, "totalResults": len(results), "results": results}
}

// admin is the account an API key acts as (server/middleware/auth.ts:16).
var admin = map[string]any{"id": 1, "email": "admin@example.com", "username": "admin", "userType": 2, "requestCount": 0}

func (s *Server) respond(rt *route, params map[string]string, q url.Values, body []byte) (int, any) {
	notFound := func(msg string) (int, any) { return http.StatusNotFound, map[string]any{"message": msg} }
	switch rt.Method + " " + rt.Path {
	case "GET /api/v1/discover/trending":
		return http.StatusOK, page(mk2026, lastOfUs, superman, person, mk2021)
	case "GET /api/v1/discover/movies":
		return http.StatusOK, page(mk2026, superman, mk2021)
	case "GET /api/v1/discover/tv":
		return http.StatusOK, page(lastOfUs)
	case "GET /api/v1/search":
		if strings.Contains(strings.ToLower(q.Get("query")), "mortal") {
			return http.StatusOK, page(mk2026, mk2021, mk1995, mk1997)
		}
		return http.StatusOK, page()
	case "GET /api/v1/movie/{movieId}":
		id, _ := strconv.Atoi(params["movieId"])
		m, ok := movies[id]
		if !ok {
			return notFound("Unable to retrieve movie.")
		}
		d := map[string]any{}
		for k, v := range m {
			d[k] = v
		}
		delete(d, "mediaType")
		d["runtime"] = 116
		d["status"] = "Released"
		d["genres"] = []map[string]any{{"id": 28, "name": "Action"}, {"id": 14, "name": "Fantasy"}}
		return http.StatusOK, d
	case "GET /api/v1/tv/{tvId}":
		if params["tvId"] != "100088" {
			return notFound("Unable to retrieve series.")
		}
		return http.StatusOK, map[string]any{"id": 100088, "name": "The Last of Us", "firstAirDate": "2023-01-15", "numberOfSeasons": 2,
			"status": "Returning Series", "overview": lastOfUs["overview"], "genres": []map[string]any{{"id": 18, "name": "Drama"}}}
	case "GET /api/v1/request":
		s.mu.Lock()
		defer s.mu.Unlock()
		return http.StatusOK, map[string]any{"pageInfo": map[string]any{"page": 1, "pages": 1, "results": len(s.requests)}, "results": s.requests}
	case "POST /api/v1/request":
		return s.createRequest(body)
	case "POST /api/v1/issue":
		var in struct{ MediaID int }
		_ = json.Unmarshal(body, &in)
		if in.MediaID != 7 && !s.hasMedia(in.MediaID) {
			return notFound("Media does not exist.") // server/routes/issue.ts:122-128
		}
		return http.StatusCreated, map[string]any{"id": 1, "issueType": 1, "media": map[string]any{"id": in.MediaID, "tmdbId": 1061474}, "createdBy": admin}
	}
	return notFound("not found")
}

// createRequest answers POST /request as Seerr does for an admin: the
// request approved at once (the spec, :6222-6225), a second request of the
// same title refused with 409 (server/entity/MediaRequest.ts:187-189,
// server/routes/request.ts:325-326).
func (s *Server) createRequest(body []byte) (int, any) {
	var in struct {
		MediaType string
		MediaID   json.Number
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	_ = dec.Decode(&in)
	id, _ := in.MediaID.Int64()
	if in.MediaType == "movie" {
		if _, ok := movies[int(id)]; !ok {
			return http.StatusNotFound, map[string]any{"message": "Unable to retrieve movie."}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		if m := r["media"].(map[string]any); m["tmdbId"] == id && m["mediaType"] == in.MediaType {
			return http.StatusConflict, map[string]any{"message": "Request for this media already exists."}
		}
	}
	n := len(s.requests) + 1
	req := map[string]any{"id": n, "status": 2, "is4k": false, "createdAt": "2026-11-24T21:00:00.000Z", "updatedAt": "2026-11-24T21:00:00.000Z",
		"requestedBy": admin, "modifiedBy": admin,
		"media": map[string]any{"id": 100 + n, "tmdbId": id, "mediaType": in.MediaType, "status": 3}}
	s.requests = append(s.requests, req)
	return http.StatusCreated, req
}

func (s *Server) hasMedia(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		if r["media"].(map[string]any)["id"] == id {
			return true
		}
	}
	return false
}
