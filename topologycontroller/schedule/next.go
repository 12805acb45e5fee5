package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// maxLookBack bounds how far back the most recent missed scheduled time is looked for.
const maxLookBack = 366 * 24 * time.Hour

// parseSchedule parses a five-field cron expression (minute hour day-of-month month
// day-of-week); times are in UTC.
func parseSchedule(expr string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, err
	}
	if spec, ok := s.(*cron.SpecSchedule); ok {
		spec.Location = time.UTC
	}
	return s, nil
}

// lastScheduled is the most recent scheduled time at or before now and after since (zero
// when there is none). A schedule created during a scheduled minute counts that minute:
// since is the creation time, and a time in its minute is not missed.
func lastScheduled(s cron.Schedule, since, now time.Time) time.Time {
	from := since.UTC().Truncate(time.Minute).Add(-time.Second)
	if earliest := now.Add(-maxLookBack); from.Before(earliest) {
		from = earliest
	}
	var last time.Time
	for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	return last
}

// nextScheduled is the first scheduled time after now.
func nextScheduled(s cron.Schedule, now time.Time) time.Time { return s.Next(now.UTC()) }
