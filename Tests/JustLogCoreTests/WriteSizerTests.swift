import JustLogCore
import Testing

@Suite struct WriteSizerTests {
    /// 1 s and 5 s of patience: writes may take a quarter of a second.
    private func sizer() -> WriteSizer { WriteSizer(maximum: 256, fullQueueWait: 1, exitFlushTimeout: 5) }

    @Test func writesWithinTheBudgetGrowTwiceAsLargeUpToTheMaximum() {
        var sizer = sizer()
        #expect(sizer.budget == 0.25)
        #expect(sizer.limit == WriteSizer.firstWriteLimit)
        var sizes: [Int] = []
        for _ in 0..<7 {
            sizer.wrote(sizer.limit, in: 0.001)
            sizes.append(sizer.limit)
        }
        #expect(sizes == [16, 32, 64, 128, 256, 256, 256])
    }

    @Test func aWriteOverTheBudgetShrinksTheNextInProportion() {
        var sizer = sizer()
        for _ in 0..<5 { sizer.wrote(sizer.limit, in: 0.001) }
        #expect(sizer.limit == 256)
        sizer.wrote(256, in: 2.048)  // 8 ms a record: 0.25 s holds 31
        #expect(sizer.limit == 31)
        sizer.wrote(31, in: 0.248)  // within: twice
        #expect(sizer.limit == 62)
        sizer.wrote(62, in: 0.496)  // over: back to 31, a write at most twice the budget
        #expect(sizer.limit == 31)
    }

    @Test func aDestinationSlowPerWriteNotPerRecordKeepsTheMaximum() {
        var sizer = sizer()
        for _ in 0..<5 { sizer.wrote(sizer.limit, in: 0.001) }
        sizer.wrote(256, in: 0.4)  // over: smaller, to see whether that helps
        #expect(sizer.limit == 160)
        sizer.wrote(160, in: 0.39)  // as long for fewer: it does not
        #expect(sizer.limit == 256)
    }

    @Test func aVerySlowDestinationGetsOneRecordAWrite() {
        var sizer = sizer()
        sizer.wrote(8, in: 8)
        #expect(sizer.limit == 1)
        sizer.wrote(1, in: 1)  // over again, as long per record: stays at one
        #expect(sizer.limit == 1)
        sizer.restart()
        #expect(sizer.limit == WriteSizer.firstWriteLimit, "new destinations are measured again")
    }

    @Test func patiencesThatNeverWaitAreLeftOut() {
        var sizer = WriteSizer(maximum: 256, fullQueueWait: 0, exitFlushTimeout: 2)
        #expect(sizer.budget == 0.5)
        sizer.setPatiences(fullQueueWait: 0, exitFlushTimeout: .infinity)
        #expect(sizer.budget == .infinity)
        sizer.wrote(8, in: 100)
        #expect(sizer.limit == 16, "nothing waits: writes only grow")
        sizer.setPatiences(fullQueueWait: .nan, exitFlushTimeout: -1)
        #expect(sizer.budget == .infinity)
    }

    @Test func measurementsThatSayNothingAreIgnored() {
        var sizer = sizer()
        sizer.wrote(0, in: 1)
        sizer.wrote(5, in: -1)
        sizer.wrote(5, in: .nan)
        #expect(sizer.limit == WriteSizer.firstWriteLimit)
    }
}
