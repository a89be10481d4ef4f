import ArgumentParser
import Foundation
import HeraldCore
import Testing

@testable import HeraldCLI

@Suite struct TimeArgumentTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func durationsMeanThatLongAgo() throws {
        #expect(try TimeArgument.past("90s", option: "--since", now: now) == now.addingTimeInterval(-90))
        #expect(try TimeArgument.past("10m", option: "--since", now: now) == now.addingTimeInterval(-600))
        #expect(try TimeArgument.past("1h", option: "--since", now: now) == now.addingTimeInterval(-3600))
        #expect(try TimeArgument.past("2d", option: "--since", now: now) == now.addingTimeInterval(-172_800))
        #expect(try TimeArgument.past("now", option: "--since", now: now) == now)
    }

    @Test func isoTimesAreTakenAsWritten() throws {
        let date = try TimeArgument.past("2026-11-22T10:00:00Z", option: "--since", now: now)
        #expect(date == (try Date("2026-11-22T10:00:00Z", strategy: .iso8601)))
    }

    @Test func theFutureAndNonsenseAreRefusedAsBadInput() {
        for text in ["+10m", "2030-01-01T00:00:00Z", "yesterday", "10", "-1h"] {
            do {
                _ = try TimeArgument.past(text, option: "--since", now: now)
                Issue.record("\(text) was taken")
            } catch {
                #expect(ExitStatus.of(error) == ExitStatus.usage, "\(text)")
            }
        }
    }

    @Test func exitStatusesAreDistinctPerKind() {
        #expect(ExitStatus.of(HeraldError(.argumentError, "x")) == ExitCode(64))
        #expect(ExitStatus.of(HeraldError(.notFound, "x")) == ExitCode(3))
        #expect(ExitStatus.of(HeraldError(.quotaExceeded, "x")) == ExitCode(4))
        #expect(ExitStatus.of(HeraldError(.unavailable, "x")) == ExitCode(5))
        #expect(ExitStatus.of(HeraldError(.templateError, "x")) == ExitCode(1))
        #expect(ExitStatus.of(ValidationError("x")) == ExitCode(64))
    }
}
