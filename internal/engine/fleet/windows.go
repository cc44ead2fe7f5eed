package fleet

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// dayNames are the days a window names, in time.Weekday order.
var dayNames = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

// minutesOf parses HH:MM into minutes after midnight.
func minutesOf(hhmm string) (int, error) {
	t, err := time.Parse("15:04", hhmm)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time of day such as 02:30", hhmm)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// ValidateWindows checks each window's days and times, naming the field.
func ValidateWindows(windows []v1alpha2.MaintenanceWindow) field.ErrorList {
	p := field.NewPath("spec", "strategy", "windows")
	var errs field.ErrorList
	for i, w := range windows {
		start, err1 := minutesOf(w.Start)
		if err1 != nil {
			errs = append(errs, field.Invalid(p.Index(i).Child("start"), w.Start, err1.Error()))
		}
		end, err2 := minutesOf(w.End)
		if err2 != nil {
			errs = append(errs, field.Invalid(p.Index(i).Child("end"), w.End, err2.Error()))
		}
		if err1 == nil && err2 == nil && start == end {
			errs = append(errs, field.Invalid(p.Index(i).Child("end"), w.End, "a window must not be empty: end differs from start"))
		}
		for j, d := range w.Days {
			if !slices.Contains(dayNames, d) {
				errs = append(errs, field.NotSupported(p.Index(i).Child("days").Index(j), d, dayNames))
			}
		}
	}
	return errs
}

// open tells whether w is open at now (UTC). A window whose end is before
// its start runs past midnight, and belongs to the day it starts on.
func open(w v1alpha2.MaintenanceWindow, now time.Time) bool {
	now = now.UTC()
	start, err1 := minutesOf(w.Start)
	end, err2 := minutesOf(w.End)
	if err1 != nil || err2 != nil {
		return false
	}
	minute := now.Hour()*60 + now.Minute()
	day := now.Weekday()
	if end > start {
		return minute >= start && minute < end && onDay(w, day)
	}
	if minute >= start {
		return onDay(w, day)
	}
	return minute < end && onDay(w, (day+6)%7)
}

func onDay(w v1alpha2.MaintenanceWindow, d time.Weekday) bool {
	return len(w.Days) == 0 || slices.Contains(w.Days, dayNames[d])
}

// InWindow tells whether clusters may start at now: no windows, or one open.
func InWindow(windows []v1alpha2.MaintenanceWindow, now time.Time) bool {
	if len(windows) == 0 {
		return true
	}
	return slices.ContainsFunc(windows, func(w v1alpha2.MaintenanceWindow) bool { return open(w, now) })
}

// NextWindow is when the next window opens after now, minute by minute over
// the next week; the zero time when none ever opens.
func NextWindow(windows []v1alpha2.MaintenanceWindow, now time.Time) time.Time {
	t := now.UTC().Truncate(time.Minute)
	for range 7 * 24 * 60 {
		t = t.Add(time.Minute)
		if InWindow(windows, t) {
			return t
		}
	}
	return time.Time{}
}
