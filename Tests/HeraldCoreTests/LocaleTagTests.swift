import HeraldCore
import Testing

@Suite struct LocaleTagTests {
    @Test func normalisesCaseAndSeparators() throws {
        #expect(try LocaleTag("pl_pl").value == "pl-PL")
        #expect(try LocaleTag("PT-br").value == "pt-BR")
        #expect(try LocaleTag("zh-Hant-TW").value == "zh-hant-TW")
    }

    @Test func rejectsNonTags() {
        for raw in ["", "p", "pl-", "pl PL", "../etc", "pl-PL\r\n"] {
            #expect(throws: HeraldError.self) { try LocaleTag(raw) }
        }
    }

    @Test func fallbackGoesFromSpecificToDefault() throws {
        let chain = try LocaleTag("pl-PL").fallbackChain(to: LocaleTag("en")).map(\.value)
        #expect(chain == ["pl-PL", "pl", "en"])
        #expect(try LocaleTag("en-GB").fallbackChain(to: LocaleTag("en")).map(\.value) == ["en-GB", "en"])
    }

    @Test func persianIsRightToLeft() throws {
        #expect(try LocaleTag("fa").isRightToLeft)
        #expect(try LocaleTag("fa-IR").isRightToLeft)
        #expect(try !LocaleTag("pl").isRightToLeft)
    }

    @Test func durationsParseWithUnits() {
        #expect(DurationText.parse("90s") == 90)
        #expect(DurationText.parse("15m") == 900)
        #expect(DurationText.parse("6h") == 21600)
        #expect(DurationText.parse("3d") == 259_200)
        #expect(DurationText.parse("250ms") == 0.25)
        #expect(DurationText.parse("12") == 12)
        #expect(DurationText.parse("soon") == nil)
        #expect(DurationText.parse("-5s") == nil)
    }
}
