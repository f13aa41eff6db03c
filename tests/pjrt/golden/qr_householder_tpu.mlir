module @qr attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>) -> (tensor<12xf32>, tensor<9xf32>) {
    %1 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<4x3xf32>
    // #0 iota
    %2 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x4xi64>
    %3 = "stablehlo.convert"(%2) : (tensor<4x4xi64>) -> tensor<4x4xi32>
    // #1 iota
    %4 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<4x4xi64>
    %5 = "stablehlo.convert"(%4) : (tensor<4x4xi64>) -> tensor<4x4xi32>
    // #2 compare
    %6 = "stablehlo.compare"(%3, %5) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    // #3 constant
    %7 = "stablehlo.constant"() {value = dense<1.0> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    // #4 constant
    %8 = "stablehlo.constant"() {value = dense<0.0> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
    // #5 select
    %9 = "stablehlo.select"(%6, %7, %8) : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // #6 constant
    %10 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    // #7 while_array
    %11 = "stablehlo.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
    %12 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %115:4 = "stablehlo.while"(%12, %10, %1, %9) ({
      ^bb0(%w13: tensor<i64>, %w14: tensor<f32>, %w15: tensor<4x3xf32>, %w16: tensor<4x4xf32>):
        %17 = "stablehlo.compare"(%w13, %11) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i64>, tensor<i64>) -> tensor<i1>
        %18 = "stablehlo.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
        %19 = "stablehlo.compare"(%w14, %18) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %20 = "stablehlo.and"(%17, %19) : (tensor<i1>, tensor<i1>) -> tensor<i1>
        "stablehlo.return"(%20) : (tensor<i1>) -> ()
    }, {
      ^bb0(%w21: tensor<i64>, %w22: tensor<f32>, %w23: tensor<4x3xf32>, %w24: tensor<4x4xf32>):
        %25 = "stablehlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
        %26 = "stablehlo.add"(%w21, %25) : (tensor<i64>, tensor<i64>) -> tensor<i64>
        %27 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3xi64>
        %28 = "stablehlo.convert"(%27) : (tensor<3xi64>) -> tensor<3xf32>
        %29 = "stablehlo.broadcast_in_dim"(%w22) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3xf32>
        %30 = "stablehlo.compare"(%28, %29) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
        %31 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4xi64>
        %32 = "stablehlo.convert"(%31) : (tensor<4xi64>) -> tensor<4xf32>
        %33 = "stablehlo.broadcast_in_dim"(%w22) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
        %34 = "stablehlo.broadcast_in_dim"(%30) {broadcast_dimensions = array<i64: 1>} : (tensor<3xi1>) -> tensor<4x3xi1>
        %35 = "stablehlo.constant"() {value = dense<0.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
        %36 = "stablehlo.select"(%34, %w23, %35) : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %37 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %41 = "stablehlo.reduce"(%36, %37) ({
          ^bb0(%r38: tensor<f32>, %r39: tensor<f32>):
            %40 = "stablehlo.add"(%r38, %r39) : (tensor<f32>, tensor<f32>) -> tensor<f32>
            "stablehlo.return"(%40) : (tensor<f32>) -> ()
        }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
        %42 = "stablehlo.compare"(%32, %33) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
        %43 = "stablehlo.compare"(%32, %33) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
        %44 = "stablehlo.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
        %45 = "stablehlo.select"(%42, %41, %44) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %46 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %50 = "stablehlo.reduce"(%45, %46) ({
          ^bb0(%r47: tensor<f32>, %r48: tensor<f32>):
            %49 = "stablehlo.add"(%r47, %r48) : (tensor<f32>, tensor<f32>) -> tensor<f32>
            "stablehlo.return"(%49) : (tensor<f32>) -> ()
        }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
        %51 = "stablehlo.multiply"(%41, %41) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %52 = "stablehlo.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
        %53 = "stablehlo.select"(%43, %51, %52) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %54 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %58 = "stablehlo.reduce"(%53, %54) ({
          ^bb0(%r55: tensor<f32>, %r56: tensor<f32>):
            %57 = "stablehlo.add"(%r55, %r56) : (tensor<f32>, tensor<f32>) -> tensor<f32>
            "stablehlo.return"(%57) : (tensor<f32>) -> ()
        }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
        %59 = "stablehlo.multiply"(%50, %50) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %60 = "stablehlo.add"(%59, %58) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %61 = "stablehlo.sqrt"(%60) : (tensor<f32>) -> tensor<f32>
        %62 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %63 = "stablehlo.compare"(%50, %62) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %64 = "stablehlo.negate"(%61) : (tensor<f32>) -> tensor<f32>
        %65 = "stablehlo.select"(%63, %64, %61) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
        %66 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %67 = "stablehlo.compare"(%58, %66) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %68 = "stablehlo.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
        %69 = "stablehlo.select"(%43, %41, %68) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %70 = "stablehlo.subtract"(%50, %65) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %71 = "stablehlo.broadcast_in_dim"(%70) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
        %72 = "stablehlo.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
        %73 = "stablehlo.select"(%42, %71, %72) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %74 = "stablehlo.add"(%69, %73) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %75 = "stablehlo.multiply"(%74, %74) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %76 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %80 = "stablehlo.reduce"(%75, %76) ({
          ^bb0(%r77: tensor<f32>, %r78: tensor<f32>):
            %79 = "stablehlo.add"(%r77, %r78) : (tensor<f32>, tensor<f32>) -> tensor<f32>
            "stablehlo.return"(%79) : (tensor<f32>) -> ()
        }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
        %81 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
        %82 = "stablehlo.select"(%67, %80, %81) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
        %83 = "stablehlo.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
        %84 = "stablehlo.divide"(%83, %82) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        %85 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %86 = "stablehlo.select"(%67, %84, %85) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
        %87 = "stablehlo.broadcast_in_dim"(%74) {broadcast_dimensions = array<i64: 0>} : (tensor<4xf32>) -> tensor<4x3xf32>
        %88 = "stablehlo.multiply"(%87, %w23) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %89 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %93 = "stablehlo.reduce"(%88, %89) ({
          ^bb0(%r90: tensor<f32>, %r91: tensor<f32>):
            %92 = "stablehlo.add"(%r90, %r91) : (tensor<f32>, tensor<f32>) -> tensor<f32>
            "stablehlo.return"(%92) : (tensor<f32>) -> ()
        }) {dimensions = array<i64: 0>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
        %94 = "stablehlo.broadcast_in_dim"(%86) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x3xf32>
        %95 = "stablehlo.broadcast_in_dim"(%74) {broadcast_dimensions = array<i64: 0>} : (tensor<4xf32>) -> tensor<4x3xf32>
        %96 = "stablehlo.multiply"(%94, %95) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %97 = "stablehlo.broadcast_in_dim"(%93) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<4x3xf32>
        %98 = "stablehlo.multiply"(%96, %97) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %99 = "stablehlo.subtract"(%w23, %98) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %100 = "stablehlo.broadcast_in_dim"(%74) {broadcast_dimensions = array<i64: 1>} : (tensor<4xf32>) -> tensor<4x4xf32>
        %101 = "stablehlo.multiply"(%w24, %100) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
        %102 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
        %106 = "stablehlo.reduce"(%101, %102) ({
          ^bb0(%r103: tensor<f32>, %r104: tensor<f32>):
            %105 = "stablehlo.add"(%r103, %r104) : (tensor<f32>, tensor<f32>) -> tensor<f32>
            "stablehlo.return"(%105) : (tensor<f32>) -> ()
        }) {dimensions = array<i64: 1>} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
        %107 = "stablehlo.broadcast_in_dim"(%86) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x4xf32>
        %108 = "stablehlo.broadcast_in_dim"(%106) {broadcast_dimensions = array<i64: 0>} : (tensor<4xf32>) -> tensor<4x4xf32>
        %109 = "stablehlo.multiply"(%107, %108) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
        %110 = "stablehlo.broadcast_in_dim"(%74) {broadcast_dimensions = array<i64: 1>} : (tensor<4xf32>) -> tensor<4x4xf32>
        %111 = "stablehlo.multiply"(%109, %110) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
        %112 = "stablehlo.subtract"(%w24, %111) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
        %113 = "stablehlo.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
        %114 = "stablehlo.add"(%w22, %113) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%26, %114, %99, %112) : (tensor<i64>, tensor<f32>, tensor<4x3xf32>, tensor<4x4xf32>) -> ()
    }) : (tensor<i64>, tensor<f32>, tensor<4x3xf32>, tensor<4x4xf32>) -> (tensor<i64>, tensor<f32>, tensor<4x3xf32>, tensor<4x4xf32>)
    // #8 slice
    %116 = "stablehlo.slice"(%115#3) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 4, 3>, strides = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<4x3xf32>
    // #9 slice
    %117 = "stablehlo.slice"(%115#2) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 3, 3>, strides = array<i64: 1, 1>} : (tensor<4x3xf32>) -> tensor<3x3xf32>
    // #10 iota
    %118 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3x3xi64>
    %119 = "stablehlo.convert"(%118) : (tensor<3x3xi64>) -> tensor<3x3xi32>
    // #11 iota
    %120 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<3x3xi64>
    %121 = "stablehlo.convert"(%120) : (tensor<3x3xi64>) -> tensor<3x3xi32>
    // #12 compare
    %122 = "stablehlo.compare"(%119, %121) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    // #13 constant
    %123 = "stablehlo.constant"() {value = dense<0.0> : tensor<3x3xf32>} : () -> tensor<3x3xf32>
    // #14 select
    %124 = "stablehlo.select"(%122, %117, %123) : (tensor<3x3xi1>, tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %125 = "stablehlo.reshape"(%116) : (tensor<4x3xf32>) -> tensor<12xf32>
    %126 = "stablehlo.reshape"(%124) : (tensor<3x3xf32>) -> tensor<9xf32>
    "func.return"(%125, %126) : (tensor<12xf32>, tensor<9xf32>) -> ()
  }
}
